/**
 * The checksum of a diffable result (issue 30): what a QueryDiff says the client's rows
 * must add up to after it applied the diff, and the `hash` such a result is echoed with
 * on reconnect. Browser-safe: the client computes the same thing from what it holds.
 *
 * A result is a set of rows, each an order key and the row's JSON text (as
 * `JSON.stringify` writes the wire value), plus a page's envelope. Each row contributes
 * two independent 32-bit hashes of `key \0 text`; the checksum is the row count, the two
 * sums mod 2^32 and the envelope's hash. Sums, because the server then updates it in
 * O(changed rows) per diff, once for every session at a state: subtract the rows that
 * left, add the ones that came. (The client sums its rows afresh after each diff, so that
 * nothing it computed before is trusted.)
 * The order needs no part of it, since the rows are kept sorted by their keys.
 *
 * It catches drift (a diff applied to the wrong base, a lost or doubled change), not an
 * adversary: 64 bits of sum over non-cryptographic hashes.
 */
export interface RowSums {
  count: number;
  first: number;
  second: number;
}

export function emptySums(): RowSums {
  return { count: 0, first: 0, second: 0 };
}

/** Adds (sign 1) or removes (sign -1) one row's contribution. */
export function addRow(sums: RowSums, key: string, text: string, sign: 1 | -1): void {
  const [first, second] = rowHashes(key, text);
  sums.count += sign;
  sums.first = (sums.first + sign * first) >>> 0;
  sums.second = (sums.second + sign * second) >>> 0;
}

/** The checksum string; `envelope`: a page's `{isDone, continueCursor}` JSON text, or "" for other results. */
export function checksumOf(sums: RowSums, envelope: string): string {
  const [envelopeHash] = rowHashes("", envelope);
  return `d${sums.count.toString(36)}.${sums.first.toString(36)}.${sums.second.toString(36)}.${envelopeHash.toString(36)}`;
}

/** The envelope text of a page result, as both sides write it. */
export function pageEnvelopeText(isDone: boolean, continueCursor: string): string {
  return `{"isDone":${isDone},"continueCursor":${JSON.stringify(continueCursor)}}`;
}

/** FNV-1a and a murmur-style mix over the UTF-16 units of `key \0 text`. */
function rowHashes(key: string, text: string): [number, number] {
  let first = 0x811c9dc5;
  let second = 0x9747b28c;
  const step = (unit: number) => {
    first = Math.imul(first ^ unit, 0x01000193);
    second = Math.imul(second ^ unit, 0x5bd1e995);
    second ^= second >>> 15;
  };
  for (let at = 0; at < key.length; at++) step(key.charCodeAt(at));
  step(0);
  for (let at = 0; at < text.length; at++) step(text.charCodeAt(at));
  return [first >>> 0, second >>> 0];
}
