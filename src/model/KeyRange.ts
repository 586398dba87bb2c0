import { CairnError } from "../base/index.js";
import type { DocumentId } from "./DocumentId.js";
import { TABLE_NUMBER_MAX, encodeDocumentId, parseDocumentId } from "./DocumentId.js";
import { compareBytes } from "./compareBytes.js";

/**
 * What a read covers and a write touches: half-open byte ranges `[start, end)` within a
 * keyspace, compared byte-wise. Keyspaces are `index:<indexId>` (keys are encoded index
 * keys) and `table:<tableNumber>` (keys are `documentKey(id)`: a `get` reads one point).
 *
 * Invariants of a KeyRange built here: `start <= end` (`end === null` is +infinity);
 * `start === end` is the empty range, which contains and overlaps nothing; keys are
 * never mutated after the range is built (callers must not mutate them either).
 */
export interface KeyRange {
  readonly keyspace: string;
  readonly start: Uint8Array;
  /** Exclusive; null means unbounded above. */
  readonly end: Uint8Array | null;
}

const EMPTY_KEY = new Uint8Array(0);
const textEncoder = new TextEncoder();

export function indexKeyspace(indexId: number): string {
  checkNumber(indexId, "index id", Number.MAX_SAFE_INTEGER);
  return `index:${indexId}`;
}

export function tableKeyspace(tableNumber: number): string {
  checkNumber(tableNumber, "table number", TABLE_NUMBER_MAX);
  return `table:${tableNumber}`;
}

/** A document's key in its table keyspace: the UTF-8 bytes of its canonical id. */
export function documentKey(id: DocumentId): Uint8Array {
  return textEncoder.encode(encodeDocumentId(parseDocumentId(id)));
}

/**
 * `documentKey` of an id already known to be canonical (validated on its way in): the
 * id's letters are its key's bytes, so no parse is needed. Reads and writes of every
 * function call build one per document they touch.
 */
export function documentKeyOfCanonical(id: DocumentId): Uint8Array {
  const key = new Uint8Array(id.length);
  for (let index = 0; index < id.length; index++) key[index] = id.charCodeAt(index);
  return key;
}

/** Builds a range; KEY_RANGE_INVALID if `start > end` or the keyspace is empty. */
export function keyRange(keyspace: string, start: Uint8Array, end: Uint8Array | null): KeyRange {
  const range = { keyspace, start, end };
  validateKeyRange(range);
  return range;
}

/** Checks a range that came from elsewhere (a decoded message, a caller's literal). */
export function validateKeyRange(range: KeyRange): void {
  if (typeof range !== "object" || range === null) throw rangeInvalid("a key range must be an object");
  const { keyspace, start, end } = range;
  if (typeof keyspace !== "string" || keyspace.length === 0) throw rangeInvalid("keyspace must be a non-empty string");
  if (!(start instanceof Uint8Array)) throw rangeInvalid("start must be a Uint8Array");
  if (end !== null && !(end instanceof Uint8Array)) throw rangeInvalid("end must be a Uint8Array or null");
  if (end !== null && compareBytes(start, end) > 0) {
    throw rangeInvalid(`start ${hex(start)} is after end ${hex(end)}`, { keyspace });
  }
}

/** The range holding exactly `key`. */
export function pointRange(keyspace: string, key: Uint8Array): KeyRange {
  return keyRange(keyspace, key, successorKey(key));
}

/** Every key that starts with `prefix` (the whole keyspace for an empty prefix). */
export function prefixRange(keyspace: string, prefix: Uint8Array): KeyRange {
  return keyRange(keyspace, prefix, prefixEnd(prefix));
}

/** The whole keyspace. */
export function fullRange(keyspace: string): KeyRange {
  return keyRange(keyspace, EMPTY_KEY, null);
}

/** The smallest key greater than `key`: `key ‖ 0x00`. */
export function successorKey(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out.set(key);
  return out;
}

/**
 * The smallest key greater than every key that starts with `prefix`: drop trailing 0xFF
 * bytes and add one to the last remaining byte. Null when there is none (the prefix is
 * empty or all 0xFF), i.e. the range is unbounded above.
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array | null {
  let last = prefix.length - 1;
  while (last >= 0 && prefix[last] === 0xff) last--;
  if (last < 0) return null;
  const out = prefix.slice(0, last + 1);
  out[last] = out[last]! + 1;
  return out;
}

export function isEmptyRange(range: KeyRange): boolean {
  return range.end !== null && compareBytes(range.start, range.end) >= 0;
}

export function rangeContains(range: KeyRange, keyspace: string, key: Uint8Array): boolean {
  return (
    range.keyspace === keyspace &&
    compareBytes(range.start, key) <= 0 &&
    (range.end === null || compareBytes(key, range.end) < 0)
  );
}

/** Whether some key lies in both ranges (so never for an empty range). */
export function rangesOverlap(left: KeyRange, right: KeyRange): boolean {
  if (left.keyspace !== right.keyspace || isEmptyRange(left) || isEmptyRange(right)) return false;
  return startsBeforeEnd(left.start, right.end) && startsBeforeEnd(right.start, left.end);
}

/** `start < end`, with a null end meaning +infinity. */
export function startsBeforeEnd(start: Uint8Array, end: Uint8Array | null): boolean {
  return end === null || compareBytes(start, end) < 0;
}

function checkNumber(value: number, what: string, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new CairnError("KEY_RANGE_INVALID", `${what} must be an integer in 0..${max}, not ${String(value)}`);
  }
}

function rangeInvalid(message: string, details?: Record<string, unknown>): CairnError {
  return new CairnError("KEY_RANGE_INVALID", `invalid key range: ${message}`, details ? { details } : {});
}

function hex(bytes: Uint8Array): string {
  const shown = Array.from(bytes.subarray(0, 32), (byte) => byte.toString(16).padStart(2, "0")).join("");
  return bytes.length > 32 ? `${shown}…` : shown;
}
