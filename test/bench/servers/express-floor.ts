import { parseArgs } from 'node:util';

import express, { type Response } from 'express';

import { driverReads, sendJson } from './driver-reads.js';
import { bearerUser } from './legacy-bodies.js';

/**
 * The Express floor: the least any Express server spends on the two legacy reads — the floor's
 * driver reads and bodies behind Express 5's routing, and each token verified once, as the gateway
 * does, so that signature checks do not count. No logging, metrics, limits or GraphQL: whatever
 * an Express server must cost per request against Apollo Server's, this one costs no more.
 *
 * node --import tsx test/bench/servers/express-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret)
  throw new Error('usage: express-floor.ts --port N --uri MONGODB_URI --secret JWT_SECRET');

const verify = bearerUser(values.secret);
/** The benchmark sends one token: unbounded is fine here, as it would not be in a server. */
const verified = new Map<string, number | null>();
async function callerOf(authorization: string | undefined): Promise<number | null> {
  if (authorization === undefined) return null;
  let userId = verified.get(authorization);
  if (userId === undefined) verified.set(authorization, (userId = await verify(authorization)));
  return userId;
}
const reads = await driverReads(values.uri);

const app = express();
app.disable('x-powered-by');

async function answer(authorization: string | undefined, response: Response, read: (userId: number) => Promise<unknown>): Promise<void> {
  const userId = await callerOf(authorization);
  if (userId === null) return sendJson(response, 401, { status: false, message: 'unauthorized' });
  sendJson(response, 200, await read(userId));
}
app.get('/conversation/list', (request, response) => answer(request.get('authorization'), response, (userId) => reads.list(userId)));
app.get('/conversation/load', (request, response) =>
  answer(request.get('authorization'), response, (userId) =>
    reads.load(userId, typeof request.query.id === 'string' ? request.query.id : null),
  ),
);

const server = app.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`express floor listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void reads.close().then(() => process.exit(0));
});
