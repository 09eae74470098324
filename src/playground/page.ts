import { createHash } from 'node:crypto';

import { exampleOperations } from './example-operations.js';

export const ASSETS_PATH = '/playground/assets';

/** What the page's script receives. */
interface PlaygroundSettings {
  tabs: { query: string; variables?: string; headers: string }[];
  headers: string;
  persistHeaders: boolean;
  storageKey: string;
  styleNonce: string;
}

/**
 * The playground's HTML. With a demo token, the headers editor starts with it;
 * otherwise it shows where a token goes. Only the style nonce changes per request.
 */
export function playgroundPage(demoToken: string | undefined): (styleNonce: string) => string {
  const headers = JSON.stringify({ Authorization: `Bearer ${demoToken ?? '<your token>'}` }, null, 2);
  const tabs = exampleOperations.map((operation) => ({ ...operation, headers }));
  const settings: Omit<PlaygroundSettings, 'styleNonce'> = {
    tabs,
    headers,
    persistHeaders: demoToken !== undefined,
    storageKey: createHash('sha256').update(JSON.stringify(tabs)).digest('hex').slice(0, 16),
  };
  return (styleNonce) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>chat-gateway · GraphQL playground</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS_PATH}/graphiql.min.css">
<link rel="stylesheet" href="${ASSETS_PATH}/playground.css">
<script id="playground-settings" type="application/json">${jsonForHtml({ ...settings, styleNonce } satisfies PlaygroundSettings)}</script>
<script defer src="${ASSETS_PATH}/react.production.min.js"></script>
<script defer src="${ASSETS_PATH}/react-dom.production.min.js"></script>
<script defer src="${ASSETS_PATH}/graphiql.min.js"></script>
<script defer src="${ASSETS_PATH}/playground.js"></script>
</head>
<body>
<div id="graphiql">Loading the playground…</div>
</body>
</html>
`;
}

/** JSON that cannot end its `<script>` element or start markup, whatever strings it holds. */
function jsonForHtml(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}
