import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { type DocumentNode, getOperationAST, type GraphQLError, type GraphQLSchema, OperationTypeNode, print, validate } from 'graphql';

import type { Caller } from '../auth/authenticator.js';
import { documentIdOf } from '../security/trusted-documents.js';
import { ConfirmCallerDocument } from './generated/operations.js';
import type { RestRoute } from './route.js';

/** A route's operation, printed and validated once at start. */
export interface PreparedOperation {
  document: TypedDocumentNode;
  /** The printed document, which the GraphQL server caches parsed and validated by its text. */
  text: string;
  /** The id a remote gateway knows it by (see trusted-documents.ts). */
  id: string;
  name: string;
  /**
   * The operation changes data (a mutation, or its route says so, as claiming a gift does), so it
   * must never run for a HEAD request.
   */
  changesData: boolean;
}

export type PreparedRoute = RestRoute & { prepared: PreparedOperation };

export interface OperationResult {
  data?: Record<string, unknown> | null;
  errors?: readonly { message: string; extensions?: Record<string, unknown> }[];
}

/** The credentials were refused (by this process or by the upstream gateway). */
export const UNAUTHORIZED = Symbol('unauthorized');

export interface OperationSession {
  /** Who is calling, when this process checked the credentials itself (for the request log). */
  caller?: Caller;
  run(operation: PreparedOperation, variables: Record<string, unknown>): Promise<OperationResult | typeof UNAUTHORIZED>;
  /** Whether the credentials are good, for answers that need no operation (bad input still owes a 401 first). */
  confirmCaller(): Promise<boolean>;
}

/** What an executor needs to know of the HTTP request it serves. */
export interface CallerRequest {
  authorization: string | undefined;
  requestId: string;
  /** The client's address as this server sees it (after `trust proxy`). */
  clientAddress: string | undefined;
}

/** Runs the table's operations: in this process, or against a remote gateway (sidecar mode). */
export interface OperationExecutor {
  /** A session for the caller, or null when the credentials are refused outright. */
  open(request: CallerRequest): Promise<OperationSession | null>;
}

/** Prints and validates every route's operation against the schema, failing the start on any mismatch. */
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

function prepareOperation(document: DocumentNode, schema: GraphQLSchema, usedBy: string): PreparedOperation {
  const problems: readonly GraphQLError[] = validate(schema, document);
  const operation = getOperationAST(document);
  if (problems.length > 0 || !operation?.name) {
    throw new Error(`operation of ${usedBy} does not fit the schema: ${problems.map((p) => p.message).join('; ')}`);
  }
  const text = print(document);
  return {
    document,
    text,
    id: documentIdOf(text),
    name: operation.name.value,
    changesData: operation.operation === OperationTypeNode.MUTATION,
  };
}
