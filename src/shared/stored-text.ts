/**
 * Why `text` cannot be stored exactly as given, or null. The database stores UTF-8, which has no
 * lone surrogate (it would come back as U+FFFD); and a NUL ends text wherever it is handled as a C
 * string (SQLite's drivers among them), so the same text would read as two different ones.
 */
export function storedTextProblem(text: string): string | null {
  if (text.includes('\0')) return 'holds a NUL character';
  if (hasLoneSurrogate(text)) return 'holds a lone surrogate';
  return null;
}

/** A surrogate without its pair: `isWellFormed` (Node 20 on) is false for exactly these. */
export function hasLoneSurrogate(text: string): boolean {
  return !text.isWellFormed();
}

/** Whether `text` has more than `length` characters as a person counts them: Unicode code points, an emoji one. */
export function isLongerThan(text: string, length: number): boolean {
  // A code point takes one or two UTF-16 units, so only a text of more units can hold more.
  if (text.length <= length) return false;
  let count = 0;
  for (const _character of text) if (++count > length) return true;
  return false;
}
