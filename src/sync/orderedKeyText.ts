/**
 * An index key as text that sorts as the key does (issue 30: a diff's rows travel with
 * their order keys, and the client places them by comparing strings). Base64 over an
 * alphabet in ASCII order, without padding: bits are packed most significant first, so
 * the first differing bit of two keys lands in the first differing character, and a key
 * that is a prefix of another encodes to a prefix of its text (or a smaller last
 * character). 4 characters per 3 bytes.
 */
const ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

export function orderedKeyText(key: Uint8Array): string {
  let text = "";
  let at = 0;
  for (; at + 3 <= key.length; at += 3) {
    const bits = (key[at]! << 16) | (key[at + 1]! << 8) | key[at + 2]!;
    text += ALPHABET[bits >>> 18]! + ALPHABET[(bits >>> 12) & 63]! + ALPHABET[(bits >>> 6) & 63]! + ALPHABET[bits & 63]!;
  }
  const left = key.length - at;
  if (left === 1) {
    const bits = key[at]! << 16;
    text += ALPHABET[bits >>> 18]! + ALPHABET[(bits >>> 12) & 63]!;
  } else if (left === 2) {
    const bits = (key[at]! << 16) | (key[at + 1]! << 8);
    text += ALPHABET[bits >>> 18]! + ALPHABET[(bits >>> 12) & 63]! + ALPHABET[(bits >>> 6) & 63]!;
  }
  return text;
}
