import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';

/**
 * Hive Gateway's runtime on a node HTTP server on 127.0.0.1, over a supergraph file, forwarding
 * the client's Authorization to every subgraph, and subscriptions to the "chat" subgraph's
 * Server-Sent Events door: the router a team runs, in a process of its own.
 * Prints `listening on http://127.0.0.1:PORT`; SIGTERM stops it.
 *
 * node --import tsx test/federation/hive-gateway.ts --supergraph FILE [--no-deduplication]
 *
 * Checked as a program of its own (tsconfig.routers.json): the runtime's typings (Yoga's) widen
 * graphql's error extensions for any program they are part of.
 */
const { values } = parseArgs({ options: { supergraph: { type: 'string' }, 'no-deduplication': { type: 'boolean', default: false } } });
if (values.supergraph === undefined) throw new Error('--supergraph FILE is required');

const gateway = createGatewayRuntime({
  supergraph: readFileSync(values.supergraph, 'utf8'),
  logging: false,
  // Subscriptions go to this gateway's Server-Sent Events door (graphql-sse), not to /graphql.
  transportEntries: {
    chat: {
      options: {
        subscriptions: { kind: 'http', location: '/graphql/stream' },
        // Identical requests in flight at once are sent once, unless told otherwise (for measuring one subgraph request per client request).
        deduplicateInflightRequests: !values['no-deduplication'],
      },
    },
  },
  propagateHeaders: { fromClientToSubgraphs: ({ request }) => ({ authorization: request.headers.get('authorization') }) },
});
const server = createServer(gateway);
server.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(async () => {
    await gateway.dispose();
    process.exit(0);
  });
});
