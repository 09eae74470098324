import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { JsonSchema } from './json-schema.js';
import type { RouteInput } from './legacy-input.js';

/** Where an endpoint reports failures: `message` for conversations, `error` for quota, buy and package. */
export type FailureField = 'message' | 'error';

export type LegacyBody = Record<string, unknown>;

/** One legacy endpoint: the GraphQL operation it runs, how to get its variables, how to shape its answer. */
export interface RestRoute<TResult = any, TVariables = any> {
  method: 'GET' | 'POST';
  path: string;
  summary: string;
  operation: TypedDocumentNode<TResult, TVariables>;
  failureField: FailureField;
  input: RouteInput<TVariables>;
  /** The legacy body for the operation's data. */
  respond(data: TResult): LegacyBody;
  /** JSON Schema of the documented HTTP 200 bodies, for the OpenAPI document. */
  answers: JsonSchema;
}

/** Keeps each entry's types checked while the table holds routes of different operations. */
export function defineRoute<TResult, TVariables>(route: RestRoute<TResult, TVariables>): RestRoute {
  return route;
}

export function failureBody(route: Pick<RestRoute, 'failureField'>, text: string): LegacyBody {
  return { status: false, [route.failureField]: text };
}
