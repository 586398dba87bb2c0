import { SortedMap } from "../base/index.js";
import { compareKeyStrings, keyString, type ClientReceipt, type DocumentRevision, type IndexUpdate } from "../model/index.js";
import type { LocalMeta } from "./LocalMeta.js";

/** Index keys of one generation: the default comparator also orders numbers, dates and arrays; these are strings only. */
function newKeyTree(): SortedMap<string, IndexUpdate[]> {
  return new SortedMap<string, IndexUpdate[]>(undefined, compareKeyStrings, 64);
}

/**
 * The rows applied to a store but not yet folded into its SQLite file (DESIGN.md §6): an
 * in-memory, read-merged layer in front of the B-trees, in two generations as an LSM
 * memtable is: `active` takes every apply; a fold freezes it (it becomes `folding`, and a
 * new active starts) and, once the fold committed, the frozen generation is dropped
 * whole. Nothing is ever removed row by row.
 *
 * Invariants:
 * - Every applied row is in a generation from its apply until the fold that wrote it has
 *   committed and `folded` was called; so the generations together with the committed
 *   file always hold every applied row, and a row may briefly be in the frozen generation
 *   and the file both (identical: rows are immutable by (key, ts); a replay overwrites
 *   with the same content).
 * - Generations are folded in apply order, so for any key the active generation's rows
 *   are never older than the frozen one's, and those never older than the file's rows
 *   that no generation holds. Hence: the first of (active, folding) that has a version of
 *   a key at or below a read ts holds the newest one anywhere, and the file need not be
 *   asked; if neither has one, the file decides.
 */
export interface OverlayBatch {
  readonly revisions: readonly DocumentRevision[];
  readonly indexUpdates: readonly IndexUpdate[];
  readonly receipts: readonly ClientReceipt[];
  /** The store's meta once this batch is applied. */
  readonly meta: LocalMeta;
}


/** Owner first, as JSON, so that no owner and client id pair spells another's key. */
function floorKey(clientId: string, owner: string | null): string {
  return `${JSON.stringify(owner)}${clientId}`;
}

export function receiptKey(clientId: string, seq: number): string {
  return `${clientId}\u0000${seq}`;
}

/** The newest row with row.ts <= ts of rows sorted by ts; undefined if none. */
function newestAtOrBelow<Row extends { readonly ts: number }>(rows: readonly Row[] | undefined, ts: number): Row | undefined {
  if (rows === undefined) return undefined;
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

export interface HeldRows {
  readonly documents: number;
  readonly indexEntries: number;
  readonly receipts: number;
}

/** One key of an index as the overlay holds it: its versions in each generation (sorted by ts). */
export interface OverlayEntry {
  readonly key: string;
  readonly active: readonly IndexUpdate[] | undefined;
  readonly folding: readonly IndexUpdate[] | undefined;
}

/** The newest version of an overlay key at or below `ts`, or undefined (then the file decides). */
export function newestEntry(entry: OverlayEntry, ts: number): IndexUpdate | undefined {
  return newestAtOrBelow(entry.active, ts) ?? newestAtOrBelow(entry.folding, ts);
}

/** What a fold reads of a frozen generation. */
export interface FrozenGeneration {
  readonly documents: ReadonlyMap<string, readonly DocumentRevision[]>;
  /** Per index, keys in order with their versions sorted by ts. */
  readonly indexes: ReadonlyMap<number, { forEach(visit: (versions: IndexUpdate[], key: string) => void): unknown }>;
  readonly receipts: ReadonlyMap<string, ClientReceipt>;
  /** In apply order. */
  readonly batches: readonly OverlayBatch[];
  /** The store's meta after the generation's last batch. */
  readonly meta: LocalMeta;
}

class Generation implements FrozenGeneration {
  readonly documents = new Map<string, DocumentRevision[]>();
  /**
   * Per table, its ids in order: built on the first document scan of that table and kept
   * up to date from then on, so that a store nobody scans by id pays nothing per apply.
   */
  private readonly sortedIds = new Map<number, SortedMap<string, true>>();
  readonly indexes = new Map<number, SortedMap<string, IndexUpdate[]>>();
  readonly receipts = new Map<string, ClientReceipt>();
  /** Per client and owner (floorKey), the highest floorSeq of its receipts here. */
  readonly floors = new Map<string, number>();
  /** Per client, the highest seq of its receipts here. */
  readonly receiptCeilings = new Map<string, number>();
  readonly batches: OverlayBatch[] = [];
  held = { documents: 0, indexEntries: 0, receipts: 0 };
  /** Roughly the bytes of the rows' variable parts (values, ids, keys, results), in string length units. */
  bytes = 0;
  /** The lowest ts of any row held (Infinity if none): what a prune must fold first. */
  minTs = Number.POSITIVE_INFINITY;

  get rows(): number {
    return this.held.documents + this.held.indexEntries + this.held.receipts;
  }

  get meta(): LocalMeta {
    return this.batches[this.batches.length - 1]!.meta;
  }

  add(batch: OverlayBatch): void {
    for (const row of batch.revisions) {
      if (row.ts < this.minTs) this.minTs = row.ts;
      this.bytes += row.id.length + (row.value?.length ?? 0);
      const versions = this.documents.get(row.id);
      if (versions === undefined) {
        this.documents.set(row.id, [row]);
        this.sortedIds.get(row.tableNumber)?.set(row.id, true);
      } else insertVersion(versions, row);
    }
    for (const row of batch.indexUpdates) {
      let tree = this.indexes.get(row.indexId);
      if (tree === undefined) this.indexes.set(row.indexId, (tree = newKeyTree()));
      if (row.ts < this.minTs) this.minTs = row.ts;
      this.bytes += 2 * row.key.byteLength + (row.docId?.length ?? 0);
      const key = keyString(row.key);
      // Most keys are new: one descent to insert, a second only for a key seen before.
      if (!tree.setIfNotPresent(key, [row])) insertVersion(tree.get(key)!, row);
    }
    for (const row of batch.receipts) {
      if (row.ts < this.minTs) this.minTs = row.ts;
      this.bytes += row.clientId.length + row.result.length + (row.route?.byteLength ?? 0) + (row.owner?.length ?? 0);
      this.receipts.set(receiptKey(row.clientId, row.seq), row);
      const ceiling = this.receiptCeilings.get(row.clientId);
      if (ceiling === undefined || row.seq > ceiling) this.receiptCeilings.set(row.clientId, row.seq);
      const floorSeq = row.floorSeq ?? 0;
      if (floorSeq > 0) {
        const key = floorKey(row.clientId, row.owner ?? null);
        this.floors.set(key, Math.max(this.floors.get(key) ?? 0, floorSeq));
      }
    }
    this.batches.push(batch);
    this.held.documents += batch.revisions.length;
    this.held.indexEntries += batch.indexUpdates.length;
    this.held.receipts += batch.receipts.length;
  }

  *entries(indexId: number, start: string, end: string | null, order: "asc" | "desc"): Generator<[string, IndexUpdate[]]> {
    const tree = this.indexes.get(indexId);
    if (tree === undefined) return;
    if (order === "asc") {
      for (const pair of tree.entries(start)) {
        if (end !== null && pair[0] >= end) return;
        yield pair;
      }
    } else {
      const iterator = end === null ? tree.entriesReversed() : tree.entriesReversed(end, undefined, true);
      for (const pair of iterator) {
        if (pair[0] < start) return;
        yield pair;
      }
    }
  }

  /** Ids of table `tableNumber` with start <= id < end (end null: unbounded), in order. */
  *documentIds(tableNumber: number, start: string, end: string | null, order: "asc" | "desc"): Generator<string> {
    let tree = this.sortedIds.get(tableNumber);
    if (tree === undefined) {
      tree = new SortedMap<string, true>(undefined, compareKeyStrings, 64);
      for (const [id, versions] of this.documents) if (versions[0]!.tableNumber === tableNumber) tree.set(id, true);
      this.sortedIds.set(tableNumber, tree);
    }
    if (order === "asc") {
      for (const id of tree.keys(start)) {
        if (end !== null && id >= end) return;
        yield id;
      }
    } else {
      const iterator = end === null ? tree.entriesReversed() : tree.entriesReversed(end, undefined, true);
      for (const [id] of iterator) {
        if (id < start) return;
        yield id;
      }
    }
  }

  maxTs(): number {
    let highest = 0;
    for (const versions of this.documents.values()) highest = Math.max(highest, versions[versions.length - 1]!.ts);
    return highest;
  }
}

/**
 * Two generations' ordered keys merged into one order, each key once: pairs of what the
 * active and the frozen generation hold under it (undefined where one holds nothing).
 */
function* mergeGenerations<Item>(
  active: Iterator<Item>,
  folding: Iterator<Item>,
  keyOf: (item: Item) => string,
  order: "asc" | "desc",
): Generator<[Item | undefined, Item | undefined]> {
  const before = (left: string, right: string) => (order === "asc" ? left < right : left > right);
  let a = active.next();
  let f = folding.next();
  while (a.done !== true || f.done !== true) {
    if (f.done === true || (a.done !== true && before(keyOf(a.value), keyOf(f.value)))) {
      yield [a.value as Item, undefined];
      a = active.next();
    } else if (a.done === true || before(keyOf(f.value), keyOf(a.value))) {
      yield [undefined, f.value];
      f = folding.next();
    } else {
      yield [a.value, f.value];
      a = active.next();
      f = folding.next();
    }
  }
}

export class Overlay {
  private active = new Generation();
  private folding: Generation | null = null;

  /** Rows held (both generations). */
  get rows(): number {
    return this.active.rows + (this.folding?.rows ?? 0);
  }

  /** Bytes held (both generations; see Generation.bytes). */
  get bytes(): number {
    return this.active.bytes + (this.folding?.bytes ?? 0);
  }

  /** Bytes not yet handed to a fold. */
  get pendingBytes(): number {
    return this.active.bytes;
  }

  /** Rows not yet handed to a fold. */
  get pendingRows(): number {
    return this.active.rows;
  }

  get pendingBatches(): number {
    return this.active.batches.length;
  }

  get hasDocuments(): boolean {
    return this.active.documents.size > 0 || (this.folding?.documents.size ?? 0) > 0;
  }

  /** Rows held by kind. */
  heldRows(): HeldRows {
    const folding = this.folding?.held ?? { documents: 0, indexEntries: 0, receipts: 0 };
    return {
      documents: this.active.held.documents + folding.documents,
      indexEntries: this.active.held.indexEntries + folding.indexEntries,
      receipts: this.active.held.receipts + folding.receipts,
    };
  }

  /** The highest ts of any revision held (0 if none); O(documents held). */
  get maxTs(): number {
    return Math.max(this.active.maxTs(), this.folding?.maxTs() ?? 0);
  }

  add(batch: OverlayBatch): void {
    this.active.add(batch);
  }

  /** The newest revision of `id` at or below `ts` held here, or undefined (then ask the file). */
  document(id: string, ts: number): DocumentRevision | undefined {
    return newestAtOrBelow(this.active.documents.get(id), ts) ?? newestAtOrBelow(this.folding?.documents.get(id), ts);
  }

  receipt(clientId: string, seq: number): ClientReceipt | undefined {
    const key = receiptKey(clientId, seq);
    return this.active.receipts.get(key) ?? this.folding?.receipts.get(key);
  }

  /** The highest seq of the client's receipts held here (-1: none). */
  receiptCeiling(clientId: string): number {
    return Math.max(this.active.receiptCeilings.get(clientId) ?? -1, this.folding?.receiptCeilings.get(clientId) ?? -1);
  }

  /** The highest floor of the client's receipts of `owner` held here (0: none). */
  receiptFloor(clientId: string, owner: string | null): number {
    const key = floorKey(clientId, owner);
    return Math.max(this.active.floors.get(key) ?? 0, this.folding?.floors.get(key) ?? 0);
  }

  hasEntriesIn(indexId: number): boolean {
    return (this.active.indexes.get(indexId)?.size ?? 0) > 0 || (this.folding?.indexes.get(indexId)?.size ?? 0) > 0;
  }

  /**
   * Keys of index `indexId` with start <= key < end (end null: unbounded) in either
   * generation, ascending or descending, each once. Nothing may be applied meanwhile.
   */
  *entries(indexId: number, start: string, end: string | null, order: "asc" | "desc"): Generator<OverlayEntry> {
    const active = this.active.entries(indexId, start, end, order);
    if (this.folding === null) {
      // The common case, on every scan: no pairs to build.
      for (const [key, versions] of active) yield { key, active: versions, folding: undefined };
      return;
    }
    const folding = this.folding.entries(indexId, start, end, order);
    for (const [inActive, inFolding] of mergeGenerations(active, folding, ([key]) => key, order)) {
      yield { key: (inActive ?? inFolding)![0], active: inActive?.[1], folding: inFolding?.[1] };
    }
  }

  /**
   * Ids of table `tableNumber` with start <= id < end held in either generation, in
   * order, each once. Nothing may be applied meanwhile.
   */
  *documentIds(tableNumber: number, start: string, end: string | null, order: "asc" | "desc"): Generator<string> {
    const active = this.active.documentIds(tableNumber, start, end, order);
    if (this.folding === null) {
      yield* active;
      return;
    }
    const folding = this.folding.documentIds(tableNumber, start, end, order);
    for (const [inActive, inFolding] of mergeGenerations(active, folding, (id) => id, order)) yield (inActive ?? inFolding)!;
  }

  /** Every revision held, for `changes` (not a hot path). */
  *allRevisions(): Generator<DocumentRevision> {
    for (const generation of [this.active, this.folding]) {
      if (generation === null) continue;
      for (const versions of generation.documents.values()) yield* versions;
    }
  }

  /** True if a row at or below `ts` is not yet in the file (in either generation). */
  holdsRowsAtOrBelow(ts: number): boolean {
    return this.active.minTs <= ts || (this.folding !== null && this.folding.minTs <= ts);
  }

  /** Freezes the active generation (it must hold a batch) for a fold; none may be in flight. */
  takePending(): FrozenGeneration {
    if (this.folding !== null || this.active.batches.length === 0) throw new Error("nothing to freeze, or a fold in flight");
    this.folding = this.active;
    this.active = new Generation();
    return this.folding;
  }

  /** The fold of the frozen generation committed: it leaves the overlay. */
  folded(): void {
    this.folding = null;
  }

  /** Drops everything (a restore replaced the state). */
  clear(): void {
    this.active = new Generation();
    this.folding = null;
  }
}
