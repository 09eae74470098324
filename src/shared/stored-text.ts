/** In a `u` regular expression a surrogate pair is one code point, so only a lone surrogate is in category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

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

export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** Characters as a person counts them: Unicode code points, an emoji one. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _character of text) count += 1;
  return count;
}
