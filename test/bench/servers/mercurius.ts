import Fastify from 'fastify';
import mercurius from 'mercurius';

import { announce, graphqlPeer, withNewline } from './graphql-peer.js';

/**
 * Fastify 5 and Mercurius over the peers' minimal schema, reads, DataLoaders and JWT check
 * (graphql-peer.ts), with graphql-jit: `jit: 1` compiles an operation on its second request (its
 * parsed and validated document is kept, by query text, in Mercurius's cache of 1 024) and runs
 * the compiled code from then on. Everything else is Mercurius's defaults; the benchmark checks
 * that its answers are byte-identical to the gateway's.
 *
 * node --import tsx test/bench/servers/mercurius.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const peer = await graphqlPeer('mercurius');

const app = Fastify();
await app.register(mercurius, {
  schema: peer.schema,
  jit: 1,
  context: async (request) => {
    const context = await peer.contextOf(request.headers.authorization);
    if (context === null) throw new mercurius.ErrorWithProps('unauthorized', { code: 'UNAUTHENTICATED' }, 401);
    return context;
  },
});
app.addHook('onSend', async (_request, reply, payload) =>
  typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('application/json') ? withNewline(payload) : payload,
);
await app.listen({ port: peer.port, host: '127.0.0.1' });
announce('mercurius', peer, () => app.close());
