import { z } from 'zod';

import { API_KEY_PREFIX } from '../auth/api-key.js';
import { isApiKeyShaped } from '../auth/credential.js';
import { MAX_CREDENTIAL_LENGTH, MAX_USERNAME_LENGTH } from '../limits.js';
import { atMost, notBlank, positiveInt, text, type TextRule, typed } from '../shared/field-rules.js';
import { storedTextProblem } from '../shared/stored-text.js';
import { BALANCE_DECIMALS, exactMicros, MAX_BALANCE_POINTS } from './points.js';

const apiKeyShape: TextRule = (key) =>
  key.length >= 12 && isApiKeyShaped(key)
    ? null
    : `must start with ${API_KEY_PREFIX}, be 12 to ${MAX_CREDENTIAL_LENGTH} characters long and hold only printable ASCII without spaces`;

/**
 * What an account's fields may hold when they come from outside (a seed file, the Chat Nio
 * import): every way in checks them with these, so that what one accepts the others do too.
 * Every text is stored exactly as given, so none may hold what storage would change
 * (`storedTextProblem`).
 */
export const accountRules = {
  userId: positiveInt(),
  username: text(notBlank, storedTextProblem, atMost(MAX_USERNAME_LENGTH)),
  /** A plain key, as given; it is stored as its hash only. */
  apiKey: text(storedTextProblem, apiKeyShape),
  /** A balance given in points: held exactly in micro-points (`points.ts`). */
  balance: z
    .number(typed('a number'))
    .refine((value) => value >= 0 && value <= MAX_BALANCE_POINTS, `must be from 0 to ${MAX_BALANCE_POINTS}`)
    .refine((value) => exactMicros(value) !== null, `must have at most ${BALANCE_DECIMALS} decimal places`),
};
