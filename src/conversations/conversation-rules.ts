import { z } from 'zod';

import { accountRules } from '../accounts/index.js';
import { MAX_MESSAGE_ROLE_LENGTH, MAX_MODEL_NAME_LENGTH } from '../limits.js';
import { atMost, notEmpty, positiveInt, text, typed } from '../shared/field-rules.js';
import { storedTextProblem } from '../shared/stored-text.js';
import { storedConversationNameProblem } from './conversation-name.js';

/** Its number: unique among its owner's conversations, what the REST endpoints call `id`. */
const number = positiveInt();

const message = z.strictObject({
  role: text(notEmpty, storedTextProblem, atMost(MAX_MESSAGE_ROLE_LENGTH)),
  content: text(storedTextProblem),
});

/**
 * What a conversation may hold when it comes from outside (a seed file, the Chat Nio import):
 * every way in checks it with these, so that what one accepts the others do too. Every text is
 * stored exactly as given, so none may hold what storage would change (`storedTextProblem`).
 */
export const conversationRules = {
  number,
  /** A whole conversation as stored (`ConversationRecord`), its owner named by `userId` and its number by `id`. */
  record: z.strictObject({
    userId: accountRules.userId,
    id: number,
    // As stored: empty and blank names included; only renaming refuses those, as new input.
    name: text(storedConversationNameProblem, storedTextProblem),
    model: text(storedTextProblem, atMost(MAX_MODEL_NAME_LENGTH)),
    enableWeb: z.boolean(typed('true or false')).default(false),
    messages: z.array(message).default([]),
  }),
};
