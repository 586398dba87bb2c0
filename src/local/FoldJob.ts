import type { IndexUpdate } from "../model/index.js";
import { metaParameters } from "./LocalMeta.js";
import type { FrozenGeneration } from "./Overlay.js";

/**
 * Variable-length values of one column packed into one byte array: value n is
 * `bytes[offsets[n] .. offsets[n + 1])`, or null where `nulls[n]` is 1. Text is UTF-8.
 */
export interface PackedColumn {
  readonly bytes: Uint8Array;
  /** One more offset than values. */
  readonly offsets: Uint32Array;
  readonly nulls: Uint8Array;
}

/**
 * One fold's rows in columns of typed arrays, the form in which they cross to the fold
 * worker: their buffers are transferred, not copied (`transferablesOf`), and the worker
 * binds byte views of them, so a fold makes no string on either thread. Building a
 * job and cloning arrays of strings cost the event loop ~9 µs per document before.
 * Numbers are float64 (every ts and table number is a safe integer); a null prevTs is NaN.
 */
export interface FoldJob {
  readonly documents: {
    readonly count: number;
    readonly tableNumbers: Float64Array;
    readonly ts: Float64Array;
    readonly prevTs: Float64Array;
    readonly ids: PackedColumn;
    readonly values: PackedColumn;
  };
  readonly indexEntries: {
    readonly count: number;
    readonly indexIds: Float64Array;
    readonly ts: Float64Array;
    readonly keys: PackedColumn;
    readonly docIds: PackedColumn;
  };
  /** Few (one per mutation with a client id): plain arrays. */
  readonly receipts: {
    readonly clientIds: string[];
    readonly seqs: number[];
    readonly ts: number[];
    readonly results: string[];
    readonly routes: (Uint8Array | null)[];
    /** Null: written before receipts had owners. */
    readonly owners: (string | null)[];
    /** 0: no floor. */
    readonly floorSeqs: number[];
  };
  /** UPDATE_META parameters: where the file stands once this fold committed. */
  readonly meta: ReturnType<typeof metaParameters>;
}

/** The statements a fold runs (see statements.ts). */
export interface FoldSql {
  readonly upsertDocument: string;
  /** The same for `rowsPerStatement` rows at once (parameters row after row). */
  readonly upsertDocuments: string;
  readonly upsertIndexEntry: string;
  readonly upsertIndexEntries: string;
  readonly upsertReceipt: string;
  /** Drops a client's (and owner's) receipts below its floor: parameters clientId, floorSeq, owner. */
  readonly dropReceiptsBelowFloor: string;
  readonly updateMeta: string;
  readonly rowsPerStatement: number;
}

/** Packs values one by one, growing its buffer as needed. */
class ColumnPacker {
  private bytes: Uint8Array;
  private view: Buffer;
  private length = 0;
  private readonly offsets: Uint32Array;
  private readonly nulls: Uint8Array;
  private count = 0;

  constructor(values: number, bytesHint: number) {
    this.bytes = new Uint8Array(Math.max(64, bytesHint));
    this.view = Buffer.from(this.bytes.buffer, 0, this.bytes.byteLength);
    this.offsets = new Uint32Array(values + 1);
    this.nulls = new Uint8Array(values);
  }

  text(value: string | null): void {
    if (value === null) return this.null();
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.reserve(value.length * 3);
    this.length += this.view.write(value, this.length, "utf8");
    this.offsets[++this.count] = this.length;
  }

  raw(value: Uint8Array): void {
    this.reserve(value.byteLength);
    this.bytes.set(value, this.length);
    this.length += value.byteLength;
    this.offsets[++this.count] = this.length;
  }

  finish(): PackedColumn {
    return { bytes: this.bytes.subarray(0, this.length), offsets: this.offsets, nulls: this.nulls };
  }

  private null(): void {
    this.nulls[this.count] = 1;
    this.offsets[++this.count] = this.length;
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.bytes.byteLength) return;
    const grown = new Uint8Array(Math.max(this.bytes.byteLength * 2, this.length + extra));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = Buffer.from(grown.buffer, 0, grown.byteLength);
  }
}

/**
 * The job for a frozen overlay generation, its rows in key order (documents by id then
 * ts, entries by index, key, ts), so that rows of one B-tree page are written together:
 * a fold touches each leaf page once however many of its rows changed. The overlay's
 * structures are sorted already; only the document ids need a sort. It ends at the
 * generation's meta with the store's current readable floor (a prune may have raised it
 * since the last batch).
 */
export function foldJobOf(generation: FrozenGeneration, minReadableTs: number): FoldJob {
  // Counted, not taken from the generation's tallies: a replayed row replaces its twin.
  let documentRows = 0;
  for (const versions of generation.documents.values()) documentRows += versions.length;
  let entryRows = 0;
  for (const tree of generation.indexes.values()) tree.forEach((versions) => void (entryRows += versions.length));
  const documentIds = [...generation.documents.keys()].sort();
  const tableNumbers = new Float64Array(documentRows);
  const documentTs = new Float64Array(documentRows);
  const prevTs = new Float64Array(documentRows);
  const ids = new ColumnPacker(documentRows, documentRows * 32);
  const values = new ColumnPacker(documentRows, documentRows * 256);
  let at = 0;
  for (const id of documentIds) {
    for (const row of generation.documents.get(id)!) {
      tableNumbers[at] = row.tableNumber;
      documentTs[at] = row.ts;
      prevTs[at] = row.prevTs ?? Number.NaN;
      ids.text(row.id);
      values.text(row.value);
      at++;
    }
  }
  const indexIds = new Float64Array(entryRows);
  const entryTs = new Float64Array(entryRows);
  const keys = new ColumnPacker(entryRows, entryRows * 64);
  const docIds = new ColumnPacker(entryRows, entryRows * 32);
  let entry = 0;
  const pack = (versions: readonly IndexUpdate[]) => {
    for (const row of versions) {
      indexIds[entry] = row.indexId;
      entryTs[entry] = row.ts;
      keys.raw(row.key);
      docIds.text(row.docId);
      entry++;
    }
  };
  for (const indexId of [...generation.indexes.keys()].sort((left, right) => left - right)) generation.indexes.get(indexId)!.forEach(pack);
  const receipts: FoldJob["receipts"] = { clientIds: [], seqs: [], ts: [], results: [], routes: [], owners: [], floorSeqs: [] };
  for (const row of generation.receipts.values()) {
    receipts.clientIds.push(row.clientId);
    receipts.seqs.push(row.seq);
    receipts.ts.push(row.ts);
    receipts.results.push(row.result);
    receipts.routes.push(row.route);
    receipts.owners.push(row.owner ?? null);
    receipts.floorSeqs.push(row.floorSeq ?? 0);
  }
  return {
    documents: { count: at, tableNumbers, ts: documentTs, prevTs, ids: ids.finish(), values: values.finish() },
    indexEntries: { count: entry, indexIds, ts: entryTs, keys: keys.finish(), docIds: docIds.finish() },
    receipts,
    meta: metaParameters({ ...generation.meta, minReadableTs }),
  };
}

/** The buffers of a job, to transfer to the worker instead of copying them (the job is unusable here afterwards). */
export function transferablesOf(job: FoldJob): ArrayBuffer[] {
  const { documents, indexEntries } = job;
  const buffers = [
    documents.tableNumbers, documents.ts, documents.prevTs, indexEntries.indexIds, indexEntries.ts,
    ...[documents.ids, documents.values, indexEntries.keys, indexEntries.docIds].flatMap((column) => [column.bytes, column.offsets, column.nulls]),
  ].map((array) => array.buffer as ArrayBuffer);
  return [...new Set(buffers)];
}
