import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** What takes an upgrade request, with the connection and the bytes read past its head. */
export type UpgradeListener = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Node 22.21+, 24.9+ and 26: the server asks this, per upgrade request, whether it goes to `upgrade` or is served as a request. */
type UpgradeDeciding = Server & { shouldUpgradeCallback?: (request: IncomingMessage) => boolean };

/**
 * Node 26 parses the body of an upgrade request before emitting `upgrade` (nodejs/node#60016);
 * earlier versions leave it unread, in `head` and the socket.
 */
const PARSES_UPGRADE_BODIES = Number(process.versions.node.split('.')[0]) >= 26;

/** The door of a server that takes some of its upgrade requests (the WebSocket server on /graphql). */
interface UpgradeDoor {
  takes(request: IncomingMessage): boolean;
  upgrade: UpgradeListener;
}

/** What each server serving upgrade requests has of a door: none until `routeUpgrades` opens it. */
const routings = new WeakMap<Server, { door?: UpgradeDoor }>();

/**
 * Serves every request that carries `Upgrade` as the ordinary request it also is, unless a door
 * opened later by `routeUpgrades` takes it: an HTTP/1.1 server may ignore an upgrade it does not
 * speak (RFC 9110 §7.8), and Java's HttpClient asks for h2c on every http:// request. For a
 * server just made, whose only `'connection'` listener is still Node's own (`createHttpServer`).
 *
 * Node could serve such a request itself (with no `upgrade` listener, or when
 * `shouldUpgradeCallback` declines it), but it then drops whatever the connection sent after it
 * in the same read: llhttp stops at the end of an upgrade request and Node never parses the rest
 * (seen on Node 20, 24 and 26), so a client that pipelines never gets its next answers. So every
 * upgrade request comes to `upgrade` (Node 20 and early 22 send them all; later versions ask
 * `shouldUpgradeCallback`), and those the door does not take are handed back to the HTTP server
 * (`handBack`) with the bytes after them. The exception is a request with a body on Node 26, which
 * it has already parsed: it is left to Node, which drops what was pipelined after it.
 */
export function serveUpgradeRequests(server: Server): void {
  const routing: { door?: UpgradeDoor } = {};
  routings.set(server, routing);
  const takes = (request: IncomingMessage) => routing.door?.takes(request) ?? false;
  const deciding = server as UpgradeDeciding;
  if (typeof deciding.shouldUpgradeCallback === 'function') {
    deciding.shouldUpgradeCallback = (request) => takes(request) || !(PARSES_UPGRADE_BODIES && hasBody(request));
  }
  const serveConnection = httpConnectionListener(server);
  const unfinishedResponses = unfinishedResponseByConnection(server);
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Detached from the HTTP server, the connection has no 'error' listener until its next owner adds one.
    socket.on('error', ignoreDetachedError);
    if (takes(request)) return routing.door!.upgrade(request, socket, head);
    const unfinished = unfinishedResponses.get(socket);
    const handBackNow = () => handBack(server, serveConnection, request, socket, head);
    // A pipelined request waits for the responses before it, as the HTTP server would make it.
    if (unfinished === undefined) handBackNow();
    else unfinished.once('close', handBackNow);
  });
}

/** Gives the upgrade requests `takes` accepts to `upgrade`, on a server made by `createHttpServer`; it has one such door. */
export function routeUpgrades(server: Server, takes: (request: IncomingMessage) => boolean, upgrade: UpgradeListener): void {
  const routing = routings.get(server);
  if (routing === undefined) throw new Error('upgrades are routed on servers made by createHttpServer');
  if (routing.door !== undefined) throw new Error('this server routes its upgrades to a door already');
  routing.door = { takes, upgrade };
}

/**
 * What Node's HTTP server does with each new connection: the listener `http.Server` adds to its
 * own `'connection'` event when it is made (`connectionListener` in lib/_http_server.js), which a
 * server just made has alone.
 */
function httpConnectionListener(server: Server): (socket: Duplex) => void {
  const listeners = server.listeners('connection');
  if (listeners.length !== 1) throw new Error('upgrades are served on a server just made, before anything else listens to it');
  return listeners[0] as (socket: Duplex) => void;
}

/**
 * Serves an upgrade request the server declined as an ordinary request, through the server's own
 * HTTP code. Why this is sound, from lib/_http_server.js (`onParserExecuteCommon`, the upgrade
 * branch, alike from Node 20 to 26): before emitting `upgrade`, the server removes the listeners
 * its `connectionListener` added to the connection (`data`, `end`, `close`, `drain`, `error`,
 * `timeout`, `pause`, `resume`), stops its parser consuming the socket and frees the parser, which
 * also takes the connection out of the list that header and request timeouts and
 * `closeIdleConnections` go through; no body was parsed (Node 20 to 24 take an upgrade request as
 * bodiless, and Node 26 sends only bodiless ones here), so `head` holds every byte read past the
 * request's head, and the rest is still unread in the socket. So:
 *
 * - the request's head is written back as it came, less `Upgrade`, which the parser then no longer
 *   takes for an upgrade (llhttp needs both `Upgrade` and `Connection: upgrade`); its framing
 *   fields (Content-Length, Transfer-Encoding, Expect) are untouched, so the body is read exactly
 *   as it would have been, chunked or not, and so are the requests after it (keep-alive);
 * - that head and `head` go back in front of the unread bytes (`unshift`), and the socket is given
 *   to `connectionListener` again, which adds back what the upgrade branch removed: a fresh parser,
 *   its timeouts and its place in the connections list, as for a new connection. Only to it: the
 *   other `'connection'` listeners (Apollo Server's drain, which adds a `close` listener to each
 *   connection) saw this connection when it opened, and would count it once more for each request
 *   it carries. The socket itself stays the same, so `maxConnections` and the server's count of
 *   open connections, which `net.Server` keeps, are unchanged.
 */
function handBack(server: Server, serveConnection: (socket: Duplex) => void, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  socket.off('error', ignoreDetachedError);
  if (socket.destroyed) return;
  socket.unshift(head);
  socket.unshift(headWithoutUpgrade(request));
  serveConnection.call(server, socket);
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
    // A response closes once: `on` rather than `once`, whose wrapper a live stream would hold besides.
    response.on('close', () => {
      if (responses.get(connection) === response) responses.delete(connection);
    });
  });
  return responses;
}

/** Whether a request has a body, as llhttp frames it: chunked, or a length above 0. */
function hasBody(request: IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/** A connection reset between owners: it is destroyed already, and nothing waits on it. */
function ignoreDetachedError(): void {}
