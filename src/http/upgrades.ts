import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** What takes an upgrade request, with the connection and the bytes read past its head. */
export type UpgradeListener = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Node 22.21+ and 24.9+: the server asks this, per request, whether an upgrade request goes to `upgrade`. */
type UpgradeDeciding = Server & { shouldUpgradeCallback?: (request: IncomingMessage) => boolean };

/**
 * Gives the upgrade requests `takes` accepts to `upgrade`, and serves every other request that
 * carries `Upgrade` as the ordinary request it also is: an HTTP/1.1 server may ignore an upgrade
 * it does not speak (RFC 9110 §7.8), and Java's HttpClient asks for h2c on every http:// request.
 *
 * Node 22.21+ and 24.9+ decide this themselves through `shouldUpgradeCallback`. Older versions
 * (Node 20) emit `upgrade` for every request with `Upgrade` and `Connection: upgrade` as soon as
 * the server has an `upgrade` listener, after detaching the connection from the HTTP server;
 * `handBack` gives such a connection back.
 */
export function routeUpgrades(server: Server, takes: (request: IncomingMessage) => boolean, upgrade: UpgradeListener): void {
  const deciding = server as UpgradeDeciding;
  const decidesItself = typeof deciding.shouldUpgradeCallback === 'function';
  if (decidesItself) deciding.shouldUpgradeCallback = takes;
  const unfinishedResponses = decidesItself ? undefined : unfinishedResponseByConnection(server);
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Detached from the HTTP server, the connection has no 'error' listener until its next owner adds one.
    socket.on('error', ignoreDetachedError);
    if (takes(request)) return upgrade(request, socket, head);
    const unfinished = unfinishedResponses?.get(socket);
    const handBackNow = () => handBack(server, request, socket, head);
    // A pipelined request waits for the responses before it, as the HTTP server would make it.
    if (unfinished === undefined) handBackNow();
    else unfinished.once('close', handBackNow);
  });
}

/**
 * Serves an upgrade request the server declined as an ordinary request, through the server's own
 * HTTP code. Why this is sound, from Node 20's lib/_http_server.js (`onParserExecuteCommon`, the
 * upgrade branch): before emitting `upgrade`, the server removes the connection's listeners, stops
 * its parser consuming the socket and frees the parser, which also takes the connection out of the
 * list that header and request timeouts and `closeIdleConnections` go through; the body was not
 * parsed (an upgrade request is taken as bodiless), so `head` holds every byte read past the
 * request's head, and the rest is still unread in the socket. So:
 *
 * - the request's head is written back as it came, less `Upgrade`, which the parser then no longer
 *   takes for an upgrade (llhttp needs both `Upgrade` and `Connection: upgrade`); its framing
 *   fields (Content-Length, Transfer-Encoding, Expect) are untouched, so the body is read exactly
 *   as it would have been, chunked or not, and so are the requests after it (keep-alive);
 * - that head and `head` go back in front of the unread bytes (`unshift`), and the socket is given
 *   to the server as a connection ('connection' event, which Node documents for injecting one):
 *   a fresh parser, its timeouts and its place in the connections list, as for any new connection.
 *   The socket itself stays the same, so `maxConnections` and the server's count of open
 *   connections, which `net.Server` keeps, are unchanged.
 */
function handBack(server: Server, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  socket.off('error', ignoreDetachedError);
  if (socket.destroyed) return;
  socket.unshift(head);
  socket.unshift(headWithoutUpgrade(request));
  server.emit('connection', socket);
}

/** The request line and header fields as received (names as spelled, repeats kept), less `Upgrade`. */
function headWithoutUpgrade(request: IncomingMessage): Buffer {
  const lines = [`${request.method} ${request.url} HTTP/${request.httpVersion}`];
  const raw = request.rawHeaders;
  for (let index = 0; index < raw.length; index += 2) {
    if (raw[index]!.toLowerCase() !== 'upgrade') lines.push(`${raw[index]}: ${raw[index + 1]}`);
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

/**
 * The last response of each connection while it is unfinished: a request handed back is served
 * once it is done ('close' comes after the server has let go of the connection for it).
 */
function unfinishedResponseByConnection(server: Server): WeakMap<Duplex, ServerResponse> {
  const responses = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = request.socket;
    responses.set(connection, response);
    response.once('close', () => {
      if (responses.get(connection) === response) responses.delete(connection);
    });
  });
  return responses;
}

/** A connection reset between owners: it is destroyed already, and nothing waits on it. */
function ignoreDetachedError(): void {}
