import type { Value } from "../model/Value.js";
import { decodeValue } from "../model/ValueJson.js";
import type { DiffableRows, QueryModification } from "../sync/protocol.js";
import { addRow, checksumOf, emptySums, pageEnvelopeText } from "../sync/resultChecksum.js";

type QueryDiff = Extract<QueryModification, { type: "QueryDiff" }>;

/**
 * The rows of a diffable result the client holds (issue 30): each row's order key, its
 * JSON text (for the checksum) and its decoded value, in the result's order, and a page's
 * envelope. A QueryDiff is applied to them by key; the result must then add up to the
 * diff's checksum, or the client asks for the result whole (ResetQuery) and keeps showing
 * the one it had — never a wrong one.
 */
export interface HeldRows {
  readonly shape: DiffableRows["shape"];
  readonly order: DiffableRows["order"];
  readonly keys: readonly string[];
  readonly texts: readonly string[];
  readonly values: readonly Value[];
  readonly envelope: { readonly isDone: boolean; readonly continueCursor: string } | null;
}

/** The rows of a QueryUpdated that came with `rows`; null if they do not add up to its hash (then: reset). */
export function heldRowsOf(rows: DiffableRows, wireValue: unknown, hash: string): HeldRows | null {
  try {
    const wireRows: unknown[] =
      rows.shape === "document" ? [wireValue] : rows.shape === "array" ? (wireValue as unknown[]) : ((wireValue as { page: unknown[] }).page ?? []);
    if (!Array.isArray(wireRows) || wireRows.length !== rows.keys.length) return null;
    const page = rows.shape === "page" ? (wireValue as { isDone: boolean; continueCursor: string }) : null;
    const held: HeldRows = {
      shape: rows.shape,
      order: rows.order,
      keys: rows.keys,
      texts: wireRows.map((row) => JSON.stringify(row)),
      values: wireRows.map((row) => decodeValue(row)),
      envelope: page === null ? null : { isDone: page.isDone, continueCursor: page.continueCursor },
    };
    return checksumOfHeld(held) === hash ? held : null;
  } catch {
    return null;
  }
}

/** The rows and the result's value after `diff`; null if the diff does not apply or does not add up to its checksum. */
export function applyDiff(held: HeldRows, diff: QueryDiff): { rows: HeldRows; value: Value } | null {
  try {
    const keys = [...held.keys];
    const texts = [...held.texts];
    const values = [...held.values];
    const descending = held.order === "desc";
    for (const change of diff.changes) {
      const { at, found } = position(keys, change.key, descending);
      if (change.op === "remove") {
        if (!found) return null;
        keys.splice(at, 1);
        texts.splice(at, 1);
        values.splice(at, 1);
      } else if (change.op === "edit") {
        if (!found) return null;
        texts[at] = JSON.stringify(change.value);
        values[at] = decodeValue(change.value);
      } else {
        if (found) return null;
        keys.splice(at, 0, change.key);
        texts.splice(at, 0, JSON.stringify(change.value));
        values.splice(at, 0, decodeValue(change.value));
      }
    }
    const envelope = diff.page ?? held.envelope;
    const rows: HeldRows = { shape: held.shape, order: held.order, keys, texts, values, envelope };
    if (checksumOfHeld(rows) !== diff.checksum) return null;
    return { rows, value: valueOf(rows) };
  } catch {
    return null;
  }
}

/** The result's value: the rows, a page of them, or the one document. */
export function valueOf(rows: HeldRows): Value {
  if (rows.shape === "document") return rows.values[0]!;
  if (rows.shape === "array") return [...rows.values];
  return { page: [...rows.values], isDone: rows.envelope!.isDone, continueCursor: rows.envelope!.continueCursor };
}

function checksumOfHeld(rows: HeldRows): string {
  const sums = emptySums();
  rows.keys.forEach((key, at) => addRow(sums, key, rows.texts[at]!, 1));
  return checksumOf(sums, rows.envelope === null ? "" : pageEnvelopeText(rows.envelope.isDone, rows.envelope.continueCursor));
}

/** Where `key` is, or would go, among `keys` (sorted ascending, or descending). */
function position(keys: readonly string[], key: string, descending: boolean): { at: number; found: boolean } {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const before = descending ? keys[middle]! > key : keys[middle]! < key;
    if (before) low = middle + 1;
    else high = middle;
  }
  return { at: low, found: keys[low] === key };
}
