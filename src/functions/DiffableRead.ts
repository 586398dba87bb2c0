import { CairnError } from "../base/index.js";
import {
  compareBytes,
  type DocumentId,
  type DocumentRevision,
  documentKeyOfCanonical,
  encodeValueText,
  indexKeyspace,
  keyRange,
  pointRange,
  successorKey,
  tableKeyspace,
  type KeyRange,
} from "../model/index.js";
import type { IndexInfo, TableInfo } from "./catalog.js";
import { decodeDocument, indexKeyOf, type DocumentObject } from "./documents.js";
import { idKeyBytes } from "./documentIdRange.js";
import { encodeCursor } from "./paginationCursor.js";

/**
 * A query result a subscription can keep current from the documents commits write,
 * without running the query again (issue 30: incremental diffs). It is one read's result
 * returned unchanged by the handler (ResultGuard proves that): a document read by id, or
 * the rows of one unfiltered index range — `take`, `collect`, a page — in the range's
 * order.
 *
 * How a commit moves it (`advance`): every written document of the table leaves the rows
 * if it was among them, and joins them if its new key lies in the range; the rows are
 * then cut to the read's limit. A range read that stopped at its limit knows nothing past
 * its last row, so a change that leaves fewer rows than the limit before that point would
 * need a read to fill the gap: `advance` answers null, and the query runs again. So do a
 * document read whose document would appear or vanish (a handler may test for null
 * without the guard seeing), a `collect` past its bound (the run would fail) and a
 * pinned page past its split size (the run would add a splitCursor).
 *
 * Invariant: for every commit sequence `advance` accepts, the rows equal what the read
 * would return at the new ts — checked by test/functions/diffableReads.test.ts against
 * fresh runs.
 */
export type DiffableShape = "array" | "page" | "document";

/** What a guarded read (ResultGuard) records of itself. */
export interface DiffableCapture {
  readonly shape: DiffableShape;
  readonly table: TableInfo;
  /** The index the range is of (for a document read, the table's `by_id`). */
  readonly index: IndexInfo;
  readonly start: Uint8Array;
  readonly end: Uint8Array | null;
  readonly order: "asc" | "desc";
  /** At most this many rows. */
  readonly limit: number;
  /** Past `limit`: the last rows leave ("truncate": take, a page) or the query must run again ("rerun"). */
  readonly beyondLimit: "truncate" | "rerun";
  readonly rows: readonly { readonly key: Uint8Array; readonly document: DocumentObject }[];
  /** Every row of the range is among `rows` (fewer than `limit` were found). */
  readonly complete: boolean;
  /** A page's envelope: fixed (a pinned page's), or recomputed from the rows (a first page's). */
  readonly page: PageEnvelopeRule | null;
}

export type PageEnvelopeRule =
  | { readonly kind: "fixed"; readonly isDone: boolean; readonly continueCursor: string }
  | { readonly kind: "fromRows"; readonly indexId: number; readonly order: "asc" | "desc" };

/** One row of a diffable result: its key in the read's index, and its value's JSON text as the client gets it. */
export interface DiffRow {
  readonly key: Uint8Array;
  readonly id: DocumentId;
  readonly text: string;
}

export interface PageEnvelope {
  readonly isDone: boolean;
  readonly continueCursor: string;
}

/** What a commit did to a diffable result, by row key; `before`/`after`: the row's old and new forms. */
export type RowChange =
  | { readonly op: "add"; readonly after: DiffRow }
  | { readonly op: "edit"; readonly before: DiffRow; readonly after: DiffRow }
  | { readonly op: "remove"; readonly before: DiffRow };

type Read = Omit<DiffableCapture, "rows" | "complete">;

/** Each row's document point (rowPointOf), by row: rows are shared by the states a commit leaves them in. */
const ROW_POINTS = new WeakMap<DiffRow, KeyRange>();

export class DiffableResult {
  private idPositions: Map<DocumentId, number> | null = null;

  private constructor(
    private readonly read: Read,
    readonly rows: readonly DiffRow[],
    readonly complete: boolean,
    /** The page envelope (null unless shape "page"). */
    readonly envelope: PageEnvelope | null,
  ) {}

  /** The result a guarded read returned, its rows encoded now (before anything may change them). */
  static captured(capture: DiffableCapture): DiffableResult {
    const { rows, complete, ...read } = capture;
    const encoded = rows.map(({ key, document }) => ({ key, id: document._id, text: encodeValueText(document) }));
    return new DiffableResult(read, encoded, complete, envelopeOf(read, encoded, complete));
  }

  get shape(): DiffableShape {
    return this.read.shape;
  }

  get order(): "asc" | "desc" {
    return this.read.order;
  }

  get tableNumber(): number {
    return this.read.table.number;
  }

  /** The result's JSON text, as the query's value (what a run would return, encoded). */
  valueText(): string {
    if (this.read.shape === "document") return this.rows[0]!.text;
    const rows = `[${this.rows.map((row) => row.text).join(",")}]`;
    if (this.read.shape === "array") return rows;
    return `{"page":${rows},"isDone":${this.envelope!.isDone},"continueCursor":${JSON.stringify(this.envelope!.continueCursor)}}`;
  }

  /**
   * The ranges a run of the read records (SnapshotReads.scan, a document read): what a
   * commit must touch to change the result.
   */
  readRanges(): KeyRange[] {
    return [this.coveredRange(), ...this.rowPoints()];
  }

  /** The index (or table) range the rows cover: to the range's end when complete, else through the last row. */
  coveredRange(): KeyRange {
    const { index, table, start, end, order } = this.read;
    const last = this.rows.at(-1)?.key;
    const coveredStart = this.complete || order === "asc" ? start : last!;
    const coveredEnd = this.complete || order === "desc" ? end : successorKey(last!);
    return index.kind === "documents" ? keyRange(tableKeyspace(table.number), coveredStart, coveredEnd) : keyRange(indexKeyspace(index.id), coveredStart, coveredEnd);
  }

  /** A point per row's document in its table's keyspace (none for a by_id read, whose range covers them). */
  rowPoints(): KeyRange[] {
    if (this.read.index.kind === "documents") return [];
    return this.rows.map((row) => this.rowPoint(row));
  }

  /** The point of one row's document (null for a by_id read). */
  rowPointOf(row: DiffRow): KeyRange | null {
    return this.read.index.kind === "documents" ? null : this.rowPoint(row);
  }

  /** Made once per row, however many states and sessions hold the row. */
  private rowPoint(row: DiffRow): KeyRange {
    let point = ROW_POINTS.get(row);
    if (point === undefined) {
      point = pointRange(tableKeyspace(this.read.table.number), documentKeyOfCanonical(row.id));
      ROW_POINTS.set(row, point);
    }
    return point;
  }

  /**
   * The result after `revisions` (ascending ts, any tables), and the row changes that
   * make it; null when the rows alone cannot tell (see the class comment): run again.
   */
  advance(revisions: readonly DocumentRevision[]): { next: DiffableResult; changes: RowChange[] } | null {
    const { table, index, start, end, order, limit, beyondLimit, shape } = this.read;
    const latest = new Map<DocumentId, string | null>();
    for (const revision of revisions) if (revision.tableNumber === table.number) latest.set(revision.id, revision.value);
    if (latest.size === 0) return { next: this, changes: [] };
    const positions = this.positions();
    const direction = order === "asc" ? 1 : -1;
    const gone = new Set<number>();
    const joining: DiffRow[] = [];
    for (const [id, value] of latest) {
      const at = positions.get(id);
      if (at !== undefined) gone.add(at);
      if (value === null) continue;
      const document = decodeDocument(id, value);
      const key = index.kind === "documents" ? idKeyBytes(id) : indexKeyOf(index, document);
      if (compareBytes(key, start) < 0 || (end !== null && compareBytes(key, end) >= 0)) continue;
      joining.push({ key, id, text: encodeValueText(document) });
    }
    joining.sort((a, b) => compareBytes(a.key, b.key) * direction);
    const kept = gone.size === 0 ? this.rows : this.rows.filter((_, at) => !gone.has(at));
    let merged = mergeRows(kept, joining, direction);
    let complete = this.complete;
    if (!complete) {
      // Nothing is known past the last row read: rows that land past it stay unknown, and
      // the result holds only while the rows up to it still fill the limit.
      const boundary = this.rows.at(-1)!.key;
      merged = merged.filter((row) => compareBytes(row.key, boundary) * direction <= 0);
      if (merged.length < limit) return null;
    }
    if (merged.length > limit) {
      if (beyondLimit === "rerun") return null;
      merged = merged.slice(0, limit);
      complete = false;
    } else if (complete && beyondLimit === "truncate") {
      // A limited read that found fewer rows than its limit had read the whole range.
      complete = merged.length < limit;
    }
    if (shape === "document" && merged.length !== 1) return null;
    const next = new DiffableResult(this.read, merged, complete, envelopeOf(this.read, merged, complete));
    return { next, changes: rowChanges(this.rows, merged) };
  }

  private positions(): Map<DocumentId, number> {
    if (this.idPositions === null) {
      this.idPositions = new Map();
      this.rows.forEach((row, at) => this.idPositions!.set(row.id, at));
    }
    return this.idPositions;
  }
}

function envelopeOf(read: Read, rows: readonly DiffRow[], complete: boolean): PageEnvelope | null {
  const rule = read.page;
  if (read.shape !== "page" || rule === null) return null;
  if (rule.kind === "fixed") return { isDone: rule.isDone, continueCursor: rule.continueCursor };
  return { isDone: complete, continueCursor: encodeCursor({ indexId: rule.indexId, order: rule.order, afterKey: complete ? null : rows.at(-1)!.key }) };
}

function mergeRows(left: readonly DiffRow[], right: readonly DiffRow[], direction: number): DiffRow[] {
  if (right.length === 0) return [...left];
  const out: DiffRow[] = [];
  let l = 0;
  let r = 0;
  while (l < left.length || r < right.length) {
    if (r >= right.length || (l < left.length && compareBytes(left[l]!.key, right[r]!.key) * direction < 0)) out.push(left[l++]!);
    else out.push(right[r++]!);
  }
  return out;
}

/** The changes from `before` to `after` (both in key order, keys unique): removals, edits, additions. */
function rowChanges(before: readonly DiffRow[], after: readonly DiffRow[]): RowChange[] {
  const changes: RowChange[] = [];
  const afterByKey = new Map<string, DiffRow>();
  for (const row of after) afterByKey.set(keyId(row.key), row);
  const beforeKeys = new Set<string>();
  for (const row of before) {
    const id = keyId(row.key);
    beforeKeys.add(id);
    const now = afterByKey.get(id);
    if (now === undefined) changes.push({ op: "remove", before: row });
    else if (now.text !== row.text) changes.push({ op: "edit", before: row, after: now });
  }
  for (const row of after) if (!beforeKeys.has(keyId(row.key))) changes.push({ op: "add", after: row });
  return changes;
}

/** A key as a Map key (latin1: one char per byte, cheap and exact). */
function keyId(key: Uint8Array): string {
  return Buffer.from(key).toString("latin1");
}

/** For a `get` whose document exists: the one-row range of its id in the table's by_id index. */
export function documentCapture(table: TableInfo, document: DocumentObject): DiffableCapture {
  const index = [...table.indexes.values()].find((candidate) => candidate.kind === "documents");
  if (index === undefined) throw new CairnError("INTERNAL", `table ${table.name} has no by_id index`);
  const key = idKeyBytes(document._id);
  return { shape: "document", table, index, start: key, end: successorKey(key), order: "asc", limit: 1, beyondLimit: "rerun", rows: [{ key, document }], complete: true, page: null };
}
