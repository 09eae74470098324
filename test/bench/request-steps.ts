/** `node_modules/@scope/name`, `node_modules/name`, a project file, `node:…` or a V8 category such as (garbage collector). */
export function placeOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith('node:')) return url;
  const project = url.search(/\/(src|dist|test)\//);
  return project >= 0 ? url.slice(project + 1) : url;
}

/**
 * The steps of a gateway request, each by the code that does it (a pattern of its source URL).
 * A sample counts toward the step of the deepest matching frame on its stack, so that what a
 * step calls (JSON.stringify, a socket write, node internals) is that step's; a sample with no
 * matching frame is Node's HTTP server itself. A driver's command is the database driver's,
 * whatever step called it.
 */
export const GATEWAY_STEPS: [string, RegExp][] = [
  ['database driver (mongodb, bson, mongoose)', /node_modules\/(mongodb|bson|mongoose|mongodb-connection-string-url)\//],
  [
    'serialisation and write of the answer',
    /dist\/http\/json-answer\.js|node_modules\/@as-integrations\/|node_modules\/express\/lib\/response\.js|node_modules\/@apollo\/server\/dist\/esm\/runHttpQuery/,
  ],
  [
    'execution (graphql-jit, resolvers, services, stores, DataLoaders)',
    /dist\/operations\/execution\.js|node_modules\/(graphql-jit|dataloader)\/|dist\/(conversations|accounts|billing|gifts)\//,
  ],
  ['document cache and cost', /dist\/operations\/(documents|operation-cost|limits)\.js/],
  ['context', /dist\/context\.js/],
  ['operation observation (metrics, log, span)', /dist\/operations\/observer\.js|dist\/graphql\/graphql-metrics\.js/],
  ['pipeline and REST runner', /dist\/operations\/pipeline\.js|dist\/rest\/(in-process-runner|routes|route|prepared-routes)\.js/],
  ['Apollo Server request pipeline', /node_modules\/@apollo\//],
  ['GraphQL (graphql-js)', /node_modules\/graphql\//],
  ['input parsing', /dist\/rest\/inputs\.js|node_modules\/zod\//],
  ['authentication (token cache)', /dist\/auth\/|node_modules\/jose\//],
  ['rate-limit step', /dist\/security\/rate-limit|node_modules\/rate-limiter-flexible\//],
  ['request id, log line, HTTP metrics', /dist\/observability\/|node_modules\/(pino|prom-client)\//],
  ['security headers, CORS', /dist\/security\/|node_modules\/(helmet|cors)\//],
  ['body parsing', /node_modules\/(body-parser|raw-body|iconv-lite|type-is|content-type)\//],
  [
    'routing (Express)',
    /node_modules\/(express|router|path-to-regexp|finalhandler|send)\/|dist\/(app|rest\/legacy-router|http\/[a-z-]+)\.js/,
  ],
];
