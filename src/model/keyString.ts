/**
 * An order-preserving key's bytes as a latin1 string: JavaScript compares those by char
 * code, which is the memcmp order of the bytes, so sorted maps of keys (the overlay, the
 * engine's written-key index) can use native string comparison and hashing.
 */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

export function keyString(key: Uint8Array): string {
  return latin1Slice.call(key, 0, key.byteLength);
}

export function compareKeyStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
