/**
 * What JSON writes for a string, in bytes, without its quotes: `JSON.stringify` (every answer's
 * writer) escapes `"` and `\` in two bytes, a control character below U+0020 in two (`\n`, `\t`,
 * `\r`, `\b`, `\f`) or six (`\u0001`), and a lone surrogate in six (`\udc00`); everything else is
 * its UTF-8. One pass over the text, allocating nothing (about as long as `JSON.stringify` takes
 * to write it, without the copy).
 */
export function writtenBytes(text: string): number {
  let bytes = text.length;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += ASCII_EXTRA[unit]!;
    else if (unit < 0x800) bytes += 1;
    else if (unit < 0xd800 || unit > 0xdfff) bytes += 2;
    else if (unit <= 0xdbff && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: one character outside the BMP, four bytes of UTF-8 for two code units.
      bytes += 2;
      index += 1;
    } else bytes += 5;
  }
  return bytes;
}

/** The bytes an ASCII character is written in, beyond its one: escapes. */
const ASCII_EXTRA = new Uint8Array(0x80);
for (let unit = 0; unit < 0x20; unit += 1) ASCII_EXTRA[unit] = 5; // \u0001
for (const unit of [0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]) ASCII_EXTRA[unit] = 1; // \b \t \n \f \r \" \\
