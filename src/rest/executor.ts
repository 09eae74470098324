import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { getOperationAST, OperationTypeNode, print, validate, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Caller } from '../auth/authenticator.js';
import type { RestRoute } from './route.js';

/** A route's operation, printed and validated once at start. */
export interface PreparedOperation {
  document: TypedDocumentNode;
  /** The printed document, which the GraphQL server caches parsed and validated by its text. */
  text: string;
  name: string;
  /**
   * The route changes data (its operation is a mutation, or the route says so), so it must never
   * run for a HEAD request.
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
    const problems: readonly GraphQLError[] = validate(schema, route.operation);
    const operation = getOperationAST(route.operation);
    if (problems.length > 0 || !operation?.name) {
      throw new Error(`operation of ${route.method} ${route.path} does not fit the schema: ${problems.map((p) => p.message).join('; ')}`);
    }
    return { ...route, prepared: {
        document: route.operation,
        text: print(route.operation),
        name: operation.name.value,
        changesData: operation.operation === OperationTypeNode.MUTATION || route.changesData === true,
      },
    };
  });
}
