/**
 * Byte-wise order of two keys (the order of `Buffer.compare`, and of SQLite BLOBs):
 * the first differing byte decides; a proper prefix sorts first. Written without Buffer
 * so the model also runs in the browser client.
 */
export function compareBytes(left: Uint8Array, right: Uint8Array): -1 | 0 | 1 {
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference < 0 ? -1 : 1;
  }
  if (left.length === right.length) return 0;
  return left.length < right.length ? -1 : 1;
}

export function bytesEqual(left: Uint8Array, right: Uint8Array): boolean {
  return left.length === right.length && compareBytes(left, right) === 0;
}

/**
 * Two strings in the order of their UTF-8 bytes: how SQLite compares TEXT and how the
 * table keyspace orders ids. (JavaScript's `<` compares UTF-16 code units, which differs
 * for some non-ASCII text; comparing an ASCII string with any string, both agree.)
 */
export function compareUtf8(left: string, right: string): -1 | 0 | 1 {
  return compareBytes(utf8.encode(left), utf8.encode(right));
}

const utf8 = new TextEncoder();
