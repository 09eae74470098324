import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { z } from 'zod';

import type { FailureField } from './legacy-answer.js';

/**
 * Where a route's variables come from, and the zod schema that reads them: the same schema
 * parses requests and describes them in the OpenAPI document. A schema's `error` texts are the
 * legacy API's sentences for bad input.
 */
export type RouteInput<TVariables> = (
  | { from: 'nothing' }
  /** Each parameter is a string, or an array when it was given more than once or in brackets (`id[]=1`). */
  | { from: 'query'; schema: z.ZodType<TVariables, Record<string, string | string[]>> }
  | { from: 'json-body'; schema: z.ZodType<TVariables> }
) & {
  /**
   * Variables taken from request headers besides: the schema reads the headers by their names in
   * lower case, as Node gives them (a header sent twice arrives once, its values joined by ", "),
   * and answers those variables. The OpenAPI document lists each of its properties as a header.
   */
  headers?: z.ZodType<Partial<TVariables>, Record<string, string | string[] | undefined>>;
};

/** One legacy endpoint: the GraphQL operation it runs, how to get its variables, how to shape its answer. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the table holds routes of different operations (see defineRoute).
export interface RestRoute<TResult = any, TVariables = any, TBody = any> {
  method: 'GET' | 'POST';
  path: string;
  summary: string;
  operation: TypedDocumentNode<TResult, TVariables>;
  /**
   * Set on a GET endpoint whose operation is a query that still changes data (claiming a gift),
   * so that HEAD is refused there as it is where the operation is a mutation.
   */
  changesData?: true;
  failureField: FailureField;
  input: RouteInput<NoInfer<TVariables>>;
  /** Every body the endpoint answers with HTTP 200, success or reported failure; the OpenAPI document shows it. */
  answers: z.ZodType<TBody>;
  /** The legacy body for the operation's data, typed by `answers`. */
  respond(data: TResult): TBody;
}

/** Keeps each entry's types checked while the table holds routes of different operations. */
export function defineRoute<TResult, TVariables, TBody>(route: RestRoute<TResult, TVariables, TBody>): RestRoute {
  return route;
}

/** A legacy success body: `status: true`, then `fields` in their order. */
export function succeeded<const T extends object>(fields: T): { status: true } & T {
  return { status: true, ...fields };
}

/** A failure an endpoint reports with HTTP 200: `status: false` and a sentence in its failure field. */
export function failed<F extends FailureField>(field: F, text: string): { status: false } & Record<F, string> {
  return { status: false, [field]: text } as { status: false } & Record<F, string>;
}

/** The schema of a failure as a legacy endpoint answers it: `status: false` and a sentence in its failure field. */
export function failureBody<F extends FailureField>(field: F, text: z.ZodType<string> = z.string()) {
  return z.object({ status: z.literal(false), [field]: text } as { status: z.ZodLiteral<false> } & Record<F, z.ZodType<string>>);
}
