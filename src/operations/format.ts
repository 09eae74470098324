import type { GraphQLError, GraphQLFormattedError } from 'graphql';

import { codeOf, INTERNAL_CODE, INTERNAL_MESSAGE, VALIDATION_FAILED_CODE } from '../errors.js';

/** In production, every document that fails validation gets this answer: graphql-js's own messages name types, fields and arguments. */
const INVALID_DOCUMENT_MESSAGE = 'the operation is not valid (the reason is shown outside production)';

/**
 * The format stage: how an operation's errors appear in a GraphQL answer, whatever the door.
 * Apollo Server applies `formatError` to each error and `finish` to the answer (through the
 * pipeline's plugin); for answers Apollo Server does not send, the pipeline's subscribe verb (every
 * subscription door) and its refusals apply `render`, which formats each error as Apollo Server
 * does and then finishes the answer alike.
 *
 * In production an internal error shows only its code and where it happened (its message may
 * name internals: a driver error, a field that broke), and a document that fails validation is
 * answered with one error of its code and a message that names nothing: graphql-js's messages
 * name the schema's types, fields and arguments, and one error per wrong name, with its place,
 * would tell the right ones apart. Every internal error names the request, to be matched with
 * its log line.
 */
export class ErrorFormat {
  constructor(private readonly production: boolean) {}

  /**
   * Apollo Server's `formatError`: one formatted error, masked when internal in production.
   * Outside production Apollo Server gives every error its stack (`extensions.stacktrace`); only
   * an internal error keeps it: a client's own mistake (a syntax error, a bad argument, missing
   * credentials) is told by its message and code, and its stack would show only the server's code.
   */
  readonly formatError = (formatted: GraphQLFormattedError): GraphQLFormattedError => {
    if (codeOf(formatted) !== INTERNAL_CODE) return withoutStack(formatted);
    if (!this.production) return formatted;
    return { message: INTERNAL_MESSAGE, ...(formatted.path && { path: formatted.path }), extensions: { code: INTERNAL_CODE } };
  };

  /** The last step over an answer's formatted errors. */
  finish(errors: readonly GraphQLFormattedError[], requestId: string): GraphQLFormattedError[] {
    if (this.production && errors.some((error) => codeOf(error) === VALIDATION_FAILED_CODE)) {
      return [{ message: INVALID_DOCUMENT_MESSAGE, extensions: { code: VALIDATION_FAILED_CODE } }];
    }
    return errors.map((error) => (codeOf(error) === INTERNAL_CODE ? { ...error, extensions: { ...error.extensions, requestId } } : error));
  }

  /** Errors of an answer Apollo Server does not send, formatted as it formats them (a code on each, no HTTP details), then finished. */
  render(errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] {
    const formatted = errors.map((error) => {
      const { http: _http, ...extensions } = error.extensions ?? {};
      return this.formatError({ ...error.toJSON(), extensions: { ...extensions, code: extensions.code ?? INTERNAL_CODE } });
    });
    return this.finish(formatted, requestId);
  }
}

function withoutStack(formatted: GraphQLFormattedError): GraphQLFormattedError {
  if (formatted.extensions?.stacktrace === undefined) return formatted;
  const { stacktrace: _stacktrace, ...extensions } = formatted.extensions;
  return { ...formatted, extensions };
}
