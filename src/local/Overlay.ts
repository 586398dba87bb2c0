import sortedBtree from "sorted-btree";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../model/Revision.js";
import type { LocalMeta } from "./LocalMeta.js";

// sorted-btree is CommonJS with the class as `exports.default`: Node's ESM import gives
// the exports object, a bundler's interop (vitest) may give the class itself.
const BTree: typeof sortedBtree.default =
  (sortedBtree as unknown as { default?: typeof sortedBtree.default }).default ?? (sortedBtree as unknown as typeof sortedBtree.default);
type BTree<K, V> = InstanceType<typeof sortedBtree.default<K, V>>;

/**
 * The rows applied to a store but not yet folded into its SQLite file (DESIGN.md §6): an
 * in-memory, read-merged layer in front of the B-trees.
 *
 * Invariants:
 * - Every applied row is here from its apply until the fold that wrote it has committed
 *   and `folded` was called; so the overlay together with the committed file always holds
 *   every applied row, and a row may briefly be in both (identical: rows are immutable by
 *   (key, ts), a replay overwrites with the same content).
 * - Rows leave only through `folded` (or `clear`, for a restore), so for any key the
 *   overlay's rows are never older than the file's rows that the overlay does not also
 *   hold. Hence: if the overlay has a version of a key at or below a read ts, it is the
 *   newest one anywhere, and the file need not be asked.
 * - Batches are folded in apply order; a fold takes every pending batch at once.
 */
export interface OverlayBatch {
  /** The lowest ts of the batch's rows (Infinity if it has none). */
  readonly minTs: number;
  readonly revisions: readonly DocumentRevision[];
  readonly indexUpdates: readonly IndexUpdate[];
  readonly receipts: readonly ClientReceipt[];
  /** The store's meta once this batch is applied. */
  readonly meta: LocalMeta;
}

/** Index keys as latin1 strings: JS compares those by char code, which is memcmp order of the bytes. */
export function keyString(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
}

export function receiptKey(clientId: string, seq: number): string {
  return `${clientId}\u0000${seq}`;
}

/** The newest row with row.ts <= ts of rows sorted by ts; undefined if none. */
function newestAtOrBelow<Row extends { readonly ts: number }>(rows: readonly Row[], ts: number): Row | undefined {
  for (let index = rows.length - 1; index >= 0; index--) {
    if (rows[index]!.ts <= ts) return rows[index];
  }
  return undefined;
}

/** Puts `row` into `rows` (sorted by ts), replacing a row of the same ts. */
function insertVersion<Row extends { readonly ts: number }>(rows: Row[], row: Row): void {
  let at = rows.length;
  while (at > 0 && rows[at - 1]!.ts > row.ts) at--;
  if (at > 0 && rows[at - 1]!.ts === row.ts) rows[at - 1] = row;
  else rows.splice(at, 0, row);
}

/** Removes exactly `row` (by identity) from `rows`; true if `rows` is then empty. */
function removeVersion<Row>(rows: Row[], row: Row): boolean {
  const at = rows.lastIndexOf(row);
  if (at >= 0) rows.splice(at, 1);
  return rows.length === 0;
}

export interface OverlayEntry {
  readonly key: string;
  /** Sorted by ts. */
  readonly versions: readonly IndexUpdate[];
}

export class Overlay {
  private readonly documents = new Map<string, DocumentRevision[]>();
  private readonly indexes = new Map<number, BTree<string, IndexUpdate[]>>();
  private readonly receipts = new Map<string, ClientReceipt>();
  private pending: OverlayBatch[] = [];
  private inFlight: OverlayBatch[] = [];
  private pendingRowCount = 0;
  private rowCount = 0;
  private held = { documents: 0, indexEntries: 0, receipts: 0 };
  /** When the oldest pending batch was added (performance.now), or null. */
  private oldestPendingAt: number | null = null;

  /** Rows held (pending and in flight). */
  get rows(): number {
    return this.rowCount;
  }

  /** Rows not yet handed to a fold. */
  get pendingRows(): number {
    return this.pendingRowCount;
  }

  /** Rows held by kind. */
  heldRows(): { readonly documents: number; readonly indexEntries: number; readonly receipts: number } {
    return { ...this.held };
  }

  get pendingBatches(): number {
    return this.pending.length;
  }

  get pendingSinceMs(): number | null {
    return this.oldestPendingAt;
  }

  get hasDocuments(): boolean {
    return this.documents.size > 0;
  }

  /** The highest ts of any revision held (0 if none); O(documents held). */
  get maxTs(): number {
    let highest = 0;
    for (const versions of this.documents.values()) highest = Math.max(highest, versions[versions.length - 1]!.ts);
    return highest;
  }

  add(batch: OverlayBatch, nowMs: number): void {
    for (const row of batch.revisions) {
      let versions = this.documents.get(row.id);
      if (versions === undefined) this.documents.set(row.id, (versions = []));
      insertVersion(versions, row);
    }
    for (const row of batch.indexUpdates) {
      let tree = this.indexes.get(row.indexId);
      if (tree === undefined) this.indexes.set(row.indexId, (tree = new BTree<string, IndexUpdate[]>()));
      const key = keyString(row.key);
      const versions = tree.get(key);
      if (versions === undefined) tree.set(key, [row]);
      else insertVersion(versions, row);
    }
    for (const row of batch.receipts) this.receipts.set(receiptKey(row.clientId, row.seq), row);
    const rows = batchRows(batch);
    this.held.documents += batch.revisions.length;
    this.held.indexEntries += batch.indexUpdates.length;
    this.held.receipts += batch.receipts.length;
    this.pending.push(batch);
    this.pendingRowCount += rows;
    this.rowCount += rows;
    this.oldestPendingAt ??= nowMs;
  }

  /** The newest revision of `id` at or below `ts` held here, or undefined (then ask the file). */
  document(id: string, ts: number): DocumentRevision | undefined {
    const versions = this.documents.get(id);
    return versions === undefined ? undefined : newestAtOrBelow(versions, ts);
  }

  /** The newest version of an index key at or below `ts` held here, or undefined. */
  newestEntry(versions: readonly IndexUpdate[], ts: number): IndexUpdate | undefined {
    return newestAtOrBelow(versions, ts);
  }

  receipt(clientId: string, seq: number): ClientReceipt | undefined {
    return this.receipts.get(receiptKey(clientId, seq));
  }

  hasEntriesIn(indexId: number): boolean {
    const tree = this.indexes.get(indexId);
    return tree !== undefined && tree.size > 0;
  }

  /**
   * Keys of index `indexId` with start <= key < end (end null: unbounded), ascending or
   * descending, with their versions. The overlay must not change while this is iterated.
   */
  *entries(indexId: number, start: string, end: string | null, order: "asc" | "desc"): Generator<OverlayEntry> {
    const tree = this.indexes.get(indexId);
    if (tree === undefined) return;
    if (order === "asc") {
      for (const [key, versions] of tree.entries(start)) {
        if (end !== null && key >= end) return;
        yield { key, versions };
      }
    } else {
      const iterator = end === null ? tree.entriesReversed() : tree.entriesReversed(end, undefined, true);
      for (const [key, versions] of iterator) {
        if (key < start) return;
        yield { key, versions };
      }
    }
  }

  /** Every revision held, for `changes` (not a hot path). */
  *allRevisions(): Generator<DocumentRevision> {
    for (const versions of this.documents.values()) yield* versions;
  }

  /** True if a row at or below `ts` is not yet in the file (pending or in flight). */
  holdsRowsAtOrBelow(ts: number): boolean {
    return this.pending.some((batch) => batch.minTs <= ts) || this.inFlight.some((batch) => batch.minTs <= ts);
  }

  /** Hands every pending batch to a fold; they stay readable until `folded`. */
  takePending(): OverlayBatch[] {
    const batches = this.pending;
    this.inFlight = this.inFlight.concat(batches);
    this.pending = [];
    this.pendingRowCount = 0;
    this.oldestPendingAt = null;
    return batches;
  }

  /** The fold of the in-flight batches committed: their rows leave the overlay. */
  folded(): void {
    for (const batch of this.inFlight) {
      for (const row of batch.revisions) {
        const versions = this.documents.get(row.id);
        if (versions !== undefined && removeVersion(versions, row)) this.documents.delete(row.id);
      }
      for (const row of batch.indexUpdates) {
        const tree = this.indexes.get(row.indexId);
        const key = keyString(row.key);
        const versions = tree?.get(key);
        if (versions !== undefined && removeVersion(versions, row)) tree!.delete(key);
      }
      for (const row of batch.receipts) {
        const key = receiptKey(row.clientId, row.seq);
        if (this.receipts.get(key) === row) this.receipts.delete(key);
      }
      this.rowCount -= batchRows(batch);
      this.held.documents -= batch.revisions.length;
      this.held.indexEntries -= batch.indexUpdates.length;
      this.held.receipts -= batch.receipts.length;
    }
    this.inFlight = [];
  }

  /** Drops everything (a restore replaced the state). */
  clear(): void {
    this.documents.clear();
    this.indexes.clear();
    this.receipts.clear();
    this.pending = [];
    this.inFlight = [];
    this.pendingRowCount = 0;
    this.rowCount = 0;
    this.held = { documents: 0, indexEntries: 0, receipts: 0 };
    this.oldestPendingAt = null;
  }
}

function batchRows(batch: OverlayBatch): number {
  return batch.revisions.length + batch.indexUpdates.length + batch.receipts.length;
}
