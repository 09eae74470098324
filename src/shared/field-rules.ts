import { GRAPHQL_MAX_INT } from 'graphql';
import { z } from 'zod';

import { isLongerThan } from './stored-text.js';

/**
 * The pieces the domains' rules of single values are made of (`accounts/account-rules.ts`,
 * `conversations/conversation-rules.ts`), as zod schemas whose messages read as the end of
 * `path: message`: `users[0].quota: must be a number`.
 */

/** A missing field is "required"; a field of the wrong type says which type it needs. */
export const typed = (kind: string) => ({
  error: (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : `must be ${kind}`),
});

/** An id as GraphQL's `Int` holds it, and as the REST endpoints show it: an integer from 1 to 2147483647. */
export function positiveInt() {
  return z
    .number(typed('a number'))
    .refine(
      (value) => Number.isInteger(value) && value >= 1 && value <= GRAPHQL_MAX_INT,
      `must be an integer from 1 to ${GRAPHQL_MAX_INT}`,
    );
}

/** A rule of a text field: why the text is refused, or null. */
export type TextRule = (text: string) => string | null;

/** A string that passes every rule; the first one that refuses it gives the message. */
export function text(...rules: TextRule[]) {
  return z.string(typed('a string')).superRefine((value, context) => {
    for (const rule of rules) {
      const message = rule(value);
      if (message !== null) return context.addIssue({ code: 'custom', message, input: value });
    }
  });
}

export const notEmpty: TextRule = (value) => (value === '' ? 'must not be empty' : null);
export const notBlank: TextRule = (value) => (value.trim() === '' ? 'must not be empty' : null);
export const atMost =
  (length: number): TextRule =>
  (value) =>
    isLongerThan(value, length) ? `must be at most ${length} characters` : null;

/** A zod issue as `path: message`, e.g. `users[0].quota: must be from 0 to 1000000000`. */
export function describeIssue(prefix: string) {
  return (issue: z.core.$ZodIssue): string => {
    const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('');
    return `${`${prefix}${path}`.replace(/^\./, '') || '(file)'}: ${issue.message}`;
  };
}
