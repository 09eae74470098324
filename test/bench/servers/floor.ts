import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import { driverReads, sendJson } from './driver-reads.js';
import { bearerUser } from './legacy-bodies.js';

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
const reads = await driverReads(values.uri);

const server = createServer(async (request, response) => {
  try {
    const url = new URL(request.url ?? '/', 'http://floor');
    if (request.method !== 'GET' || (url.pathname !== '/conversation/list' && url.pathname !== '/conversation/load')) {
      return sendJson(response, 404, { status: false, message: 'not found' });
    }
    const userId = await callerOf(request.headers.authorization);
    if (userId === null) return sendJson(response, 401, { status: false, message: 'unauthorized' });
    sendJson(
      response,
      200,
      url.pathname === '/conversation/list' ? await reads.list(userId) : await reads.load(userId, url.searchParams.get('id')),
    );
  } catch {
    sendJson(response, 500, { status: false, message: 'internal error' });
  }
});
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`floor listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void reads.close().then(() => process.exit(0));
});
