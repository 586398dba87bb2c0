import { CairnError } from "../base/index.js";
import { compareUtf8, documentIdSpan, type IndexBound, type IndexBounds } from "../model/index.js";

/**
 * The `by_id` index is served from the table's documents themselves (LocalStore's
 * documentScan), not from stored index entries: a document's id is its key in the
 * table keyspace, so a second copy of every id in an index would only cost writes. This
 * turns `withIndex("by_id", q => q.eq("_id", x))` or a range on `_id` into the id range it
 * reads, as text [start, end), within the table's id span, and into the same range of
 * the table keyspace's key bytes (UTF-8 of the ids).
 */
export interface DocumentIdRange {
  readonly start: string;
  readonly end: string;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

export function documentIdRange(tableNumber: number, bounds: IndexBounds): DocumentIdRange {
  const span = documentIdSpan(tableNumber);
  let start = span.first;
  let end = `${span.last}\u0000`;
  const equal = bounds.equal[0];
  if (bounds.equal.length > 0) {
    const id = idBound(equal);
    start = max(start, id);
    end = min(end, `${id}\u0000`);
  }
  if (bounds.lower !== undefined) start = max(start, lowerOf(bounds.lower));
  if (bounds.upper !== undefined) end = min(end, upperOf(bounds.upper));
  return compareUtf8(start, end) < 0 ? { start, end } : { start, end: start };
}

export function idKeyBytes(id: string): Uint8Array {
  return textEncoder.encode(id);
}

export function idOfKeyBytes(key: Uint8Array): string {
  return textDecoder.decode(key);
}

function lowerOf(bound: IndexBound): string {
  const id = idBound(bound.value);
  return bound.inclusive ? id : `${id}\u0000`;
}

function upperOf(bound: IndexBound): string {
  const id = idBound(bound.value);
  return bound.inclusive ? `${id}\u0000` : id;
}

function idBound(value: unknown): string {
  if (typeof value !== "string") throw new CairnError("INVALID_ARGUMENT", `by_id bounds are document ids (strings), not ${value === undefined ? "missing" : typeof value}`);
  return value;
}

function max(left: string, right: string): string {
  return compareUtf8(left, right) > 0 ? left : right;
}

function min(left: string, right: string): string {
  return compareUtf8(left, right) < 0 ? left : right;
}
