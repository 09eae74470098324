import { CloseCode, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';

import type { Logger } from '../logger.js';

/**
 * Hands a socket to graphql-ws's protocol server (`makeServer`), as graphql-ws's own binding for
 * `ws` (`useServer`) does, for as long as the socket is open. `extra` is what the protocol's
 * context holds for this socket: given by the caller, where `useServer` holds the upgrade request
 * with its headers for the socket's whole life. Keep-alive pings are the caller's too, one beat
 * for every socket (`useServer` runs a timer per socket). A message whose handling fails closes
 * the socket with 1011, as with `useServer`, and is logged here rather than on the console.
 */
export function openProtocol<E>(server: Server<E>, websocket: WebSocket, extra: E, logger: Logger): void {
  const closed = server.opened(
    {
      protocol: websocket.protocol,
      send: (data) =>
        new Promise<void>((resolve, reject) => {
          if (websocket.readyState !== websocket.OPEN) return resolve();
          websocket.send(data, (error) => (error ? reject(error) : resolve()));
        }),
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
