import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';

import { badUserInput, internal, rateLimited } from '../../../src/errors.js';
import { ErrorFormat } from '../../../src/operations/format.js';

describe('the format stage', () => {
  it('gives every error a code, internal when it has none, and drops the HTTP details', () => {
    const rendered = new ErrorFormat(false).render([new GraphQLError('broke', { path: ['quota'] }), rateLimited(2)], 'r');
    expect(rendered).toEqual([
      { message: 'broke', path: ['quota'], extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'r' } },
      { message: 'too many requests', extensions: { code: 'RATE_LIMITED', retryAfter: 2 } },
    ]);
  });

  it('shows an internal error’s message outside production', () => {
    expect(new ErrorFormat(false).render([internal(new Error('x'))], 'r')[0]!.message).toBe('internal server error');
    expect(
      new ErrorFormat(false).render([new GraphQLError('Cannot return null for non-nullable field Conversation.name.')], 'r')[0]!.message,
    ).toBe('Cannot return null for non-nullable field Conversation.name.');
  });

  it('in production, shows of an internal error only its code, where it happened and its request', () => {
    const rendered = new ErrorFormat(true).render(
      [new GraphQLError('driver: secret host 10.0.0.3', { path: ['conversation', 'name'] })],
      'request-9',
    );
    expect(rendered).toEqual([
      {
        message: 'internal server error',
        path: ['conversation', 'name'],
        extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'request-9' },
      },
    ]);
  });

  it('in production, answers a document that fails validation with one error that names nothing', () => {
    const invalid = [
      new GraphQLError('Cannot query field "nope" on type "Query".', { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }),
      new GraphQLError('Cannot query field "other" on type "Query".', { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }),
    ];
    expect(new ErrorFormat(true).render(invalid, 'r')).toEqual([
      { message: 'the operation is not valid (the reason is shown outside production)', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ]);
    expect(new ErrorFormat(false).render(invalid, 'r')).toHaveLength(2);
  });

  it('leaves expected failures as they are, in production too', () => {
    expect(new ErrorFormat(true).render([badUserInput('`first` must not be negative')], 'r')).toEqual([
      { message: '`first` must not be negative', extensions: { code: 'BAD_USER_INPUT' } },
    ]);
  });

  it('formatError (Apollo Server’s) masks an internal error in production and nothing else', () => {
    const format = new ErrorFormat(true);
    expect(format.formatError({ message: 'secret', extensions: { code: 'INTERNAL_SERVER_ERROR' } })).toEqual({
      message: 'internal server error',
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
    const expected = { message: 'invalid id', extensions: { code: 'BAD_USER_INPUT' } };
    expect(format.formatError(expected)).toBe(expected);
    expect(new ErrorFormat(false).formatError({ message: 'secret' })).toEqual({ message: 'secret' });
  });
});
