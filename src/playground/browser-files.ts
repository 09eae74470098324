/**
 * The playground's own browser code, served as files so the page's Content-Security-Policy
 * can forbid inline script and style. The page passes its settings as a JSON data block.
 */
export const bootstrapScript = `'use strict';
(function () {
  var settings = JSON.parse(document.getElementById('playground-settings').textContent);
  // GraphiQL's dialogs add a <style> element (scroll locking) at run time; it gets this page's
  // style nonce, so the policy can keep refusing inline styles that come with the markup.
  var createElement = document.createElement;
  document.createElement = function (tagName, options) {
    var element = createElement.call(document, tagName, options);
    if (String(tagName).toLowerCase() === 'style') element.setAttribute('nonce', settings.styleNonce);
    return element;
  };
  // The page is served at the GraphQL endpoint itself, so this also works behind a path prefix.
  // Subscriptions go over a WebSocket to the same address (graphql-ws, bundled with GraphiQL);
  // the headers editor's Authorization becomes its connection_init payload.
  var socketUrl = (window.location.protocol === 'https:' ? 'wss://' : 'ws://') + window.location.host + window.location.pathname;
  var props = {
    fetcher: GraphiQL.createFetcher({ url: window.location.pathname, subscriptionUrl: socketUrl }),
    // Tabs saved by an earlier run (another demo token, other examples) are not mixed with these.
    storage: GraphiQL.createLocalStorage({ namespace: 'chat-gateway:' + settings.storageKey }),
    defaultTabs: settings.tabs,
    defaultHeaders: settings.headers,
    defaultEditorToolsVisibility: 'headers',
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: settings.persistHeaders,
  };
  ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, props));
})();
`;

export const pageStyle = `html, body, #graphiql { height: 100%; margin: 0; }
`;
