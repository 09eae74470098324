import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';
import { type WebSocket, WebSocketServer } from 'ws';

import { bearerUser } from './legacy-bodies.js';

/**
 * The floor of live updates: the `mongodb` driver's change stream, and `ws` or a bare `node:http`
 * event stream, nothing else. No server can deliver the same event to the same subscribers for
 * less, so the gateway's distance from it is what its subscription layers cost, and the floor's
 * own figures are what this machine's sockets and HTTP responses cost. One subscription per
 * socket or stream, as the benchmark opens them. No validation, execution, limits, metrics or
 * keep-alive; each event is serialised once and written to every subscriber of its user.
 *
 * - WebSocket, on `/graphql`: a socket authenticates in `connection_init` (a JWT check) and may
 *   subscribe; it gets the balance first, then each balance write of its user, as the one `next`
 *   message the gateway would send.
 * - Server-Sent Events, a `POST` to `/graphql/stream` with a bearer token (a JWT check): one
 *   response head written at once (no header map, no framework), then the same events as the
 *   gateway's `graphql-sse` distinct connections, `event: next\ndata: …\n\n`. What an idle stream
 *   costs here is what Node's HTTP server keeps for a response in progress.
 *
 * node --import tsx test/bench/servers/live-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) {
  throw new Error('usage: live-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET');
}

const callerOf = bearerUser(values.secret);
const client = await MongoClient.connect(values.uri);
/** Each user's WebSocket subscriptions: the socket and the subscription's id. */
const sockets = new Map<number, Map<WebSocket, string>>();
/** Each user's event streams. */
const streams = new Map<number, Set<ServerResponse>>();

const users = client.db().collection<{ id: number; balanceMicros?: number }>('users');
const changes = users.watch([{ $match: { operationType: 'update', 'updateDescription.updatedFields.balanceMicros': { $exists: true } } }], {
  fullDocument: 'updateLookup',
});
changes.on('change', (change) => {
  if (change.operationType !== 'update') return;
  const document = change.fullDocument as { id?: number; balanceMicros?: number } | undefined;
  if (document?.id === undefined) return;
  const payload = quotaPayload(document.balanceMicros);
  const ofUser = sockets.get(document.id);
  if (ofUser !== undefined) for (const [socket, id] of ofUser) socket.send(nextMessage(id, payload));
  const streamsOfUser = streams.get(document.id);
  if (streamsOfUser !== undefined) {
    const event = nextEvent(payload);
    for (const response of streamsOfUser) response.write(event);
  }
});

function quotaPayload(balanceMicros: number | undefined): string {
  return JSON.stringify({ data: { quota: (balanceMicros ?? 0) / 1e6 } });
}

function nextMessage(id: string, payload: string): string {
  return `{"id":${JSON.stringify(id)},"type":"next","payload":${payload}}`;
}

function nextEvent(payload: string): string {
  return `event: next\ndata: ${payload}\n\n`;
}

async function balanceOf(userId: number): Promise<number | undefined> {
  return (await users.findOne({ id: userId }, { projection: { balanceMicros: 1 } }))?.balanceMicros;
}

function running(): number {
  let count = 0;
  for (const ofUser of sockets.values()) count += ofUser.size;
  for (const ofUser of streams.values()) count += ofUser.size;
  return count;
}

/** An event stream: the head, graphql-sse's first keep-alive comment, the balance, then the user's events. */
async function stream(request: IncomingMessage, response: ServerResponse): Promise<void> {
  request.resume();
  const userId = await callerOf(request.headers.authorization);
  if (userId === null) return void response.writeHead(401).end();
  let ofUser = streams.get(userId);
  if (ofUser === undefined) streams.set(userId, (ofUser = new Set()));
  ofUser.add(response);
  const subscribed = ofUser;
  response.once('close', () => subscribed.delete(response));
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'close' });
  response.write(':\n\n');
  response.write(nextEvent(quotaPayload(await balanceOf(userId))));
}

/** `/readyz` as the gateway's names it, for the benchmark to wait on, and the event streams. */
const server = createServer((request, response) => {
  if (request.method === 'POST' && request.url === '/graphql/stream') return void stream(request, response);
  if (request.url !== '/readyz') return response.writeHead(404).end();
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ subscriptions: running() }));
});
const websockets = new WebSocketServer({ server, path: '/graphql' });
websockets.on('connection', (socket) => {
  let userId: number | null = null;
  socket.on('message', async (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string; payload?: { Authorization?: string } };
    if (message.type === 'connection_init') {
      userId = await callerOf(message.payload?.Authorization);
      if (userId === null) return socket.close(4403, 'Forbidden');
      return socket.send('{"type":"connection_ack"}');
    }
    if (message.type === 'subscribe' && userId !== null && message.id !== undefined) {
      let ofUser = sockets.get(userId);
      if (ofUser === undefined) sockets.set(userId, (ofUser = new Map()));
      ofUser.set(socket, message.id);
      // The balance as it is now, as the gateway's `quota` subscription starts.
      socket.send(nextMessage(message.id, quotaPayload(await balanceOf(userId))));
    }
  });
  socket.once('close', () => {
    if (userId !== null) sockets.get(userId)?.delete(socket);
  });
});

server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`live floor listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  for (const socket of websockets.clients) socket.terminate();
  server.closeAllConnections();
  server.close();
  void changes.close().then(() => client.close().then(() => process.exit(0)));
});
