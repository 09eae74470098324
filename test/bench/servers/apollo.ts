import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { GraphQLError } from 'graphql';

import { announce, graphqlPeer, type PeerContext } from './graphql-peer.js';

/**
 * Apollo Server 5 with its default options over the peers' minimal schema for the same reads
 * (graphql-peer.ts): what the GraphQL side looks like when written the usual way — the
 * standalone server, a JWT check in the context, Mongoose `lean()` queries, and DataLoaders per
 * request. The benchmark checks that its answers to the gateway's own operations are
 * byte-identical to the gateway's.
 *
 * node --import tsx test/bench/servers/apollo.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const peer = await graphqlPeer('apollo');

const server = new ApolloServer<PeerContext>({ schema: peer.schema });
await startStandaloneServer(server, {
  listen: { port: peer.port, host: '127.0.0.1' },
  context: async ({ req }) => {
    const context = await peer.contextOf(req.headers.authorization);
    if (context === null) throw new GraphQLError('unauthorized', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
    return context;
  },
});
announce('apollo', peer, () => server.stop());
