import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

/** The floor: the cheapest possible HTTP answer from Node on this machine. */
const { values } = parseArgs({ options: { port: { type: 'string' } } });
const body = Buffer.from('{"hello":"world"}');
const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  response.end(body);
});
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`hello listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
