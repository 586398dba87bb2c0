import { assert } from "../base/index.js";
import { indexKeyPrefix } from "./IndexKey.js";
import type { KeyRange } from "./KeyRange.js";
import { indexKeyspace, keyRange, prefixEnd } from "./KeyRange.js";
import type { Value } from "./Value.js";
import { compareBytes } from "./compareBytes.js";

/**
 * Turns an index query into the byte range it reads. A query fixes the first fields
 * with equalities and may bound the next field from below and above:
 * `eq("a", 1).gt("b", 2).lte("b", 9)` is `{ equal: [1], lower: {value: 2, inclusive:
 * false}, upper: {value: 9, inclusive: true} }`. `undefined` stands for a missing field.
 *
 * Why the bounds work: every stored key is `encode([...fields, creationTime, id])`, so it
 * strictly extends the encoding of any prefix of its fields. Hence for a prefix `P`:
 * keys with fields ≥ P start at `P`; keys with fields > P (not starting with P) start
 * at `prefixEnd(P)`; "≤ P" ends at `prefixEnd(P)` and "< P" ends at `P`.
 */
export interface IndexBound {
  readonly value: Value | undefined;
  readonly inclusive: boolean;
}

export interface IndexBounds {
  readonly equal: readonly (Value | undefined)[];
  readonly lower?: IndexBound;
  readonly upper?: IndexBound;
}

/**
 * The range of index `indexId` that the bounds select. Bounds that cross (lower above
 * upper) select nothing and give an empty range: a query that matches no document is
 * not an error.
 */
export function indexRange(indexId: number, bounds: IndexBounds): KeyRange {
  const keyspace = indexKeyspace(indexId);
  const equalPrefix = indexKeyPrefix(bounds.equal);
  const start = bounds.lower === undefined ? equalPrefix : lowerKey(bounds.equal, bounds.lower);
  const end = bounds.upper === undefined ? prefixEnd(equalPrefix) : upperKey(bounds.equal, bounds.upper);
  if (end !== null && compareBytes(start, end) > 0) return keyRange(keyspace, start, start);
  return keyRange(keyspace, start, end);
}

function lowerKey(equal: readonly (Value | undefined)[], bound: IndexBound): Uint8Array {
  const prefix = indexKeyPrefix([...equal, bound.value]);
  if (bound.inclusive) return prefix;
  const after = prefixEnd(prefix);
  // An encoded element starts with a tag below 0xFF, so a non-empty prefix always has an end.
  assert(after !== null, "a non-empty index key prefix has a prefix end");
  return after;
}

function upperKey(equal: readonly (Value | undefined)[], bound: IndexBound): Uint8Array | null {
  const prefix = indexKeyPrefix([...equal, bound.value]);
  return bound.inclusive ? prefixEnd(prefix) : prefix;
}
