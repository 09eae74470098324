import type { ApolloServerPlugin } from '@apollo/server';
import type { Request, RequestHandler, Response } from 'express';
import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import { LRUCache } from 'lru-cache';

import type { RequestContext } from '../context.js';
import { boundedOperationName } from '../observability/request-labels.js';
import { isRecord } from '../shared/is-record.js';
import type { CompiledOperation, CompiledOperationLookup, CompiledQueryRunner } from './compiled-queries.js';

/** Documents remembered, most recently used kept: clients send the same few operations over and over. */
const MAX_DOCUMENTS = 1_000;
/** The types Apollo Server answers a single result in, in its order of preference. */
const RESPONSE_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/** An operation Apollo Server has validated and resolved, in the document it cached: compiled on its next request. */
interface SeenOperation {
  document: DocumentNode;
  operation: OperationDefinitionNode;
}

export interface SeenDocuments {
  /** Tells which documents and operations passed Apollo Server's parsing, validation and operation resolution. */
  plugin: ApolloServerPlugin<RequestContext>;
  /** The `/graphql` step before Apollo Server: answers the queries it has seen before, passes everything else on. */
  handler: RequestHandler;
}

/**
 * `/graphql`'s queries, the second time a document comes, as compiled code without Apollo
 * Server's request pipeline (graphql/compiled-queries.ts; compiled once, in the bounded cache the
 * executor behind Apollo Server shares): what that pipeline does first for
 * every request — hashing the text, looking up the parsed and validated document, resolving the
 * operation — is done once, by Apollo Server itself on the first request, whose plugin hook
 * tells this step that the text and operation name passed every rule (the limits, no
 * introspection in production). The answer is Apollo Server's to the byte: the same body, status,
 * headers and content negotiation.
 *
 * Anything else goes on to Apollo Server unchanged: a document not seen yet, GET, batches,
 * mutations, extensions, an `Accept` it would refuse, variables that do not coerce, a cost over the limit.
 */
export function seenDocuments(
  compiledFor: CompiledOperationLookup,
  run: CompiledQueryRunner,
  contextOf: (request: Request, response: Response) => RequestContext,
): SeenDocuments {
  /** By text, then by the request's operation name (null when none: an empty name is a name no operation has). */
  const seen = new LRUCache<string, Map<string | null, SeenOperation>>({ max: MAX_DOCUMENTS });

  const compiledSeen = (text: string, operationName: string | null): CompiledOperation | null | undefined => {
    const entry = seen.get(text)?.get(operationName);
    return entry && compiledFor(entry.document, entry.operation);
  };

  return {
    plugin: {
      async requestDidStart({ request }) {
        return {
          async didResolveOperation({ source, document, operation }) {
            if (operation?.operation !== 'query') return;
            const operations = seen.get(source) ?? new Map<string | null, SeenOperation>();
            const name = request.operationName ?? null;
            if (!operations.has(name)) operations.set(name, { document, operation });
            seen.set(source, operations);
          },
        };
      },
    },

    handler(request, response, next) {
      const body: unknown = request.method === 'POST' ? request.body : undefined;
      if (!isRecord(body) || typeof body.query !== 'string') return next();
      const { query, operationName, variables, extensions } = body;
      const plain =
        (operationName === undefined || operationName === null || typeof operationName === 'string') &&
        (variables === undefined || variables === null || isRecord(variables)) &&
        (extensions === undefined || extensions === null || (isRecord(extensions) && Object.keys(extensions).length === 0));
      const compiled = plain ? compiledSeen(query, operationName ?? null) : undefined;
      // Apollo Server answers an `Accept` none of its types satisfy with 406.
      const contentType = compiled ? request.accepts(RESPONSE_TYPES) : false;
      if (!compiled || contentType === false) return next();
      const answer = run(compiled, contextOf(request, response), (variables as Record<string, unknown> | null | undefined) ?? {});
      if (answer === undefined) return next();
      response.locals.graphqlOperationName = boundedOperationName(compiled.operation.name?.value ?? 'anonymous');
      answer.then(({ data, errors, status, headers }) => {
        for (const [name, value] of headers) response.setHeader(name, value);
        response.setHeader('content-type', contentType);
        // Apollo Server's own serialization: errors first, then data, and a final newline.
        response.status(status).send(`${JSON.stringify(errors.length > 0 ? { errors, data } : { data })}\n`);
      }, next);
    },
  };
}
