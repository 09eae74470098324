import { MAX_CONVERSATION_NAME_LENGTH, MAX_STORED_CONVERSATION_NAME_LENGTH } from '../limits.js';
import { hasLoneSurrogate, isLongerThan } from '../shared/stored-text.js';

/**
 * Why a name already given cannot be kept as it is, or null: seed files and the import take a
 * name as stored, any text of at most MAX_STORED_CONVERSATION_NAME_LENGTH characters (code points, as a
 * person counts them), the empty string and white space included. Chat Nio stores such names: its
 * rename accepts any text, and it names a conversation after its first message. What storage
 * would change (a NUL, a lone surrogate) is refused by `storedTextProblem` beside this rule.
 */
export function storedConversationNameProblem(name: string): string | null {
  if (isLongerThan(name, MAX_STORED_CONVERSATION_NAME_LENGTH)) return `must be at most ${MAX_STORED_CONVERSATION_NAME_LENGTH} characters`;
  return null;
}

/**
 * Why a new name (a rename) is refused, or null: it has 1 to MAX_CONVERSATION_NAME_LENGTH
 * characters, not all white space, and is well-formed Unicode (the database stores UTF-8, which
 * could not keep a lone surrogate as given).
 */
export function newConversationNameProblem(name: string): string | null {
  if (name.trim() === '') return 'must not be empty or blank';
  if (hasLoneSurrogate(name)) return 'holds a lone surrogate';
  if (isLongerThan(name, MAX_CONVERSATION_NAME_LENGTH)) return `must be at most ${MAX_CONVERSATION_NAME_LENGTH} characters`;
  return null;
}
