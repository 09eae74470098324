import { CloseCode, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';

import type { Logger } from '../logger.js';

/**
 * Hands a socket to graphql-ws's protocol server (`makeServer`), as graphql-ws's own binding for
 * `ws` (`useServer`) does, for as long as the socket is open. `extra` is what the protocol's
 * context holds for this socket: given by the caller, where `useServer` holds the upgrade request
 * with its headers for the socket's whole life. Keep-alive pings are the caller's too, one beat
 * for every socket (`useServer` runs a timer per socket). Unlike `useServer`, `send` does not
 * wait for the client to take a message before graphql-ws sends the next one: a client that stops
 * reading is dropped once the server holds more than the unsent-data bound for it, as the HTTP
 * streams' readers are, not held one message behind until the keep-alive beat. A message whose handling fails closes
 * the socket with 1011, as with `useServer`, and is logged here rather than on the console.
 */
export function openProtocol<E>(server: Server<E>, websocket: WebSocket, extra: E, logger: Logger): void {
  const closed = server.opened(
    {
      protocol: websocket.protocol,
      // Queued, not awaited: graphql-ws takes the next event at once, so what a client leaves unread
      // piles up on the socket, where the unsent-data bound drops it (see `boundedWebSocketClass`).
      send: (data) => {
        if (websocket.readyState === websocket.OPEN) websocket.send(data);
      },
      close: (code, reason) => websocket.close(code, reason),
      onMessage: (handle) =>
        websocket.on('message', (data) => {
          handle(String(data)).catch((error: unknown) => {
            logger.error({ err: error }, 'a WebSocket message could not be handled: its socket is closed with 1011');
            websocket.close(CloseCode.InternalServerError, 'Internal server error');
          });
        }),
    },
    extra,
  );
  websocket.once('close', (code, reason) => void closed(code, String(reason)));
}
