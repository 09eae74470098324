import { type DocumentNode, getOperationAST, type GraphQLError, type GraphQLSchema, OperationTypeNode, print, validate } from 'graphql';

import { documentIdOf } from '../operations/documents.js';
import { ConfirmCallerDocument } from './generated/operations.js';
import type { RestRoute } from './route.js';

/** A route's operation, printed and checked against the schema once, at start. */
export interface PreparedOperation {
  /** The printed document, as the pipeline (and a remote gateway) knows it. */
  text: string;
  /** Its document id: the key of the pipeline's document cache, and the trusted document a sidecar names. */
  id: string;
  name: string;
  /**
   * The operation changes data (a mutation, or its route says so, as claiming a gift does), so it
   * must never run for a HEAD request.
   */
  changesData: boolean;
}

export type PreparedRoute = RestRoute & { prepared: PreparedOperation };

/** Prints every route's operation and checks it against the schema, failing the start on any mismatch. */
export function prepareRoutes(routes: readonly RestRoute[], schema: GraphQLSchema): PreparedRoute[] {
  return routes.map((route) => {
    const prepared = prepareOperation(route.operation, schema, `${route.method} ${route.path}`);
    return { ...route, prepared: { ...prepared, changesData: prepared.changesData || route.changesData === true } };
  });
}

/** The sidecar's check of credentials, for answers that need no operation of a route. */
export function confirmCallerOperation(schema: GraphQLSchema): PreparedOperation {
  return prepareOperation(ConfirmCallerDocument, schema, 'the credentials check');
}

/**
 * The texts of every operation the REST layer runs. The gateway trusts them as documents
 * (trusted-documents.ts), so a sidecar names them by id even where only trusted documents run.
 */
export function restLayerDocuments(routes: readonly RestRoute[]): string[] {
  return [...routes.map((route) => route.operation), ConfirmCallerDocument].map((document) => print(document));
}

/**
 * Only graphql-js's own rules here: the limits are the pipeline's, applied to every request, so
 * that a route over a limit is refused as any operation is (a table entry cannot bypass them).
 */
function prepareOperation(document: DocumentNode, schema: GraphQLSchema, usedBy: string): PreparedOperation {
  const problems: readonly GraphQLError[] = validate(schema, document);
  const operation = getOperationAST(document);
  if (problems.length > 0 || !operation?.name) {
    throw new Error(`operation of ${usedBy} does not fit the schema: ${problems.map((p) => p.message).join('; ')}`);
  }
  const text = print(document);
  return { text, id: documentIdOf(text), name: operation.name.value, changesData: operation.operation === OperationTypeNode.MUTATION };
}
