import { MAX_CONVERSATION_NAME_LENGTH } from '../limits.js';
import { hasLoneSurrogate, isLongerThan } from '../shared/stored-text.js';

/**
 * Why a conversation name is refused, or null: renaming, seed files and the import share this
 * rule. A name has 1 to MAX_CONVERSATION_NAME_LENGTH characters (code points, as a person counts
 * them), not all white space, and is well-formed Unicode (the database stores UTF-8, which could
 * not keep a lone surrogate as given).
 */
export function conversationNameProblem(name: string): string | null {
  if (name.trim() === '') return 'must not be empty or blank';
  if (hasLoneSurrogate(name)) return 'holds a lone surrogate';
  if (isLongerThan(name, MAX_CONVERSATION_NAME_LENGTH)) return `must be at most ${MAX_CONVERSATION_NAME_LENGTH} characters`;
  return null;
}
