import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import { MongoClient } from 'mongodb';
import { type WebSocket, WebSocketServer } from 'ws';

import { bearerUser } from './legacy-bodies.js';

/**
 * The floor of live updates: `ws` and the `mongodb` driver's change stream, nothing else. Each
 * socket authenticates in `connection_init` (a JWT check) and may subscribe; each subscription gets the
 * balance first, then each balance write is sent to every subscription of its user as the one `next` message the gateway would send,
 * serialised once per event. No validation, execution, limits, metrics or keep-alive: no
 * server can deliver the same event to the same sockets for less, so the gateway's distance from
 * it is what its subscription layers cost, and the floor's own figures are what this machine's
 * sockets cost. One subscription per socket, as the benchmark opens them.
 *
 * node --import tsx test/bench/servers/websocket-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) {
  throw new Error('usage: websocket-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET');
}

const callerOf = bearerUser(values.secret);
const client = await MongoClient.connect(values.uri);
/** Each user's subscriptions: the socket and the subscription's id. */
const subscribers = new Map<number, Map<WebSocket, string>>();

const users = client.db().collection<{ id: number; balanceMicros?: number }>('users');
const changes = users.watch([{ $match: { operationType: 'update', 'updateDescription.updatedFields.balanceMicros': { $exists: true } } }], {
  fullDocument: 'updateLookup',
});
changes.on('change', (change) => {
  if (change.operationType !== 'update') return;
  const document = change.fullDocument as { id?: number; balanceMicros?: number } | undefined;
  const ofUser = document?.id === undefined ? undefined : subscribers.get(document.id);
  if (ofUser === undefined) return;
  const payload = quotaPayload(document!.balanceMicros);
  for (const [socket, id] of ofUser) socket.send(nextMessage(id, payload));
});

function quotaPayload(balanceMicros: number | undefined): string {
  return JSON.stringify({ data: { quota: (balanceMicros ?? 0) / 1e6 } });
}

function nextMessage(id: string, payload: string): string {
  return `{"id":${JSON.stringify(id)},"type":"next","payload":${payload}}`;
}

/** `/readyz` as the gateway's names it, for the benchmark to wait on. */
const server = createServer((request, response) => {
  if (request.url !== '/readyz') return response.writeHead(404).end();
  let running = 0;
  for (const ofUser of subscribers.values()) running += ofUser.size;
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ subscriptions: running }));
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
      let ofUser = subscribers.get(userId);
      if (ofUser === undefined) subscribers.set(userId, (ofUser = new Map()));
      ofUser.set(socket, message.id);
      // The balance as it is now, as the gateway's `quota` subscription starts.
      const user = await users.findOne({ id: userId }, { projection: { balanceMicros: 1 } });
      socket.send(nextMessage(message.id, quotaPayload(user?.balanceMicros)));
    }
  });
  socket.once('close', () => {
    if (userId !== null) subscribers.get(userId)?.delete(socket);
  });
});

server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`websocket floor listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  for (const socket of websockets.clients) socket.terminate();
  server.close();
  void changes.close().then(() => client.close().then(() => process.exit(0)));
});
