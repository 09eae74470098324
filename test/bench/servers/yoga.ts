import { createServer } from 'node:http';

import { useGraphQlJit } from '@envelop/graphql-jit';
import { createGraphQLError, createYoga, isAsyncIterable, type Plugin } from 'graphql-yoga';

import { announce, graphqlPeer, type PeerContext, withNewline } from './graphql-peer.js';

/**
 * GraphQL Yoga 5 on `node:http` with `@envelop/graphql-jit`, over the peers' minimal schema,
 * reads, DataLoaders and JWT check (graphql-peer.ts): Yoga keeps each query text's parsed and
 * validated document, and the plugin compiles an operation on its first execution and keeps the
 * compiled code by document. Everything else is Yoga's defaults but GraphiQL; the benchmark
 * checks that its answers are byte-identical to the gateway's.
 *
 * node --import tsx test/bench/servers/yoga.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const peer = await graphqlPeer('yoga');

/** Ends each JSON answer with a newline (see `withNewline`), through the serializer Yoga honours on a result. */
const endWithNewline: Plugin = {
  onExecutionResult({ result, setResult }) {
    if (result === undefined || isAsyncIterable(result)) return;
    const stringify = result.stringify ?? JSON.stringify;
    setResult({ ...result, stringify: (value) => withNewline(stringify(value)) });
  },
};

const yoga = createYoga<object, PeerContext>({
  schema: peer.schema,
  graphiql: false,
  plugins: [useGraphQlJit(), endWithNewline],
  context: async ({ request }) => {
    const context = await peer.contextOf(request.headers.get('authorization') ?? undefined);
    if (context === null) throw createGraphQLError('unauthorized', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
    return context;
  },
});
const server = createServer(yoga);
await new Promise<void>((resolve) => server.listen(peer.port, '127.0.0.1', resolve));
announce('yoga', peer, () => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});
