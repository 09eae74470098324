import { MongoClient } from 'mongodb';
import { createServer, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import { bearerUser, conversationIdOf, INVALID_ID, listBody, loadBody, type ConversationRow } from './legacy-bodies.js';

/**
 * The floor: the same two legacy reads with nothing between HTTP and the database but a JWT
 * check — `node:http`, the `mongodb` driver and jose, same bodies. No framework can be cheaper
 * than this for the same work, so the gateway's distance from it is what all its layers cost.
 *
 * node --import tsx test/bench/servers/floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) throw new Error('usage: floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET');

const callerOf = bearerUser(values.secret);
const client = await MongoClient.connect(values.uri);
const conversations = client.db().collection<ConversationRow>('conversations');
const SUMMARY = { _id: 0, id: 1, userId: 1, name: 1, model: 1, enableWeb: 1 } as const;

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}

async function list(userId: number): Promise<unknown> {
  return listBody(await conversations.find({ userId }, { projection: SUMMARY, sort: { id: -1 }, limit: 100 }).toArray());
}

async function load(userId: number, idParameter: string | null): Promise<unknown> {
  const id = conversationIdOf(idParameter);
  if (id === null) return INVALID_ID;
  return loadBody(await conversations.findOne({ userId, id }, { projection: { ...SUMMARY, messages: 1 } }));
}

const server = createServer(async (request, response) => {
  try {
    const url = new URL(request.url ?? '/', 'http://floor');
    if (request.method !== 'GET' || (url.pathname !== '/conversation/list' && url.pathname !== '/conversation/load')) {
      return send(response, 404, { status: false, message: 'not found' });
    }
    const userId = await callerOf(request.headers.authorization);
    if (userId === null) return send(response, 401, { status: false, message: 'unauthorized' });
    send(response, 200, url.pathname === '/conversation/list' ? await list(userId) : await load(userId, url.searchParams.get('id')));
  } catch {
    send(response, 500, { status: false, message: 'internal error' });
  }
});
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`floor listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void client.close().then(() => process.exit(0));
});
