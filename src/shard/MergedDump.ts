import { CairnError, LOCAL_DUMP_CHUNK_BYTES_MAX, LOCAL_DUMP_ROWS_PER_CHUNK } from "../base/index.js";
import { dumpRowBytes, type DumpChunk, type DumpCursor } from "../local/index.js";
import { compareBytes, compareStrings, type ClientReceipt, type DocumentRevision, type IndexUpdate } from "../model/index.js";
import { RecordScanner } from "../segments/index.js";
import { snapshotPartInvalid, type EncodedSnapshotPayload, type SnapshotChunk } from "../snapshots/index.js";

/**
 * A shard's state at a past ts as one dump, without building that state: the records of
 * its base snapshot overlaid by the changes after it. `changes` is a dump with removals
 * (DumpCursorOptions.includeRemovals) of a store that holds only the log replayed after
 * the base, so it is small next to the state for any recent ts.
 *
 * Per key, in dump order, the change wins; a deletion or removal drops the key; a base
 * receipt below its client's floor among the changes is dropped (the fold's rule,
 * FoldJob: every receipt of a client and owner below a floor it acknowledged). The
 * result equals the dump of a store that restored the base and applied the changes —
 * test/shard/mergedDump.test.ts checks exactly that.
 *
 * The base's documents and index entries are never decoded: a RecordScanner finds each
 * record's key in the part's bytes, and runs of records no change touches pass on as
 * they are (EncodedRows), copied into the new snapshot's parts. A restore's cost is then
 * the changes and the bytes, not a million objects built and encoded again. Receipts are
 * decoded (they are few, and the floor rule needs their owner).
 *
 * That equality holds for receipts as a log holds them: a (clientId, seq) is written
 * again only as a replay (same owner, same floor), and never below its client and
 * owner's floor. (Were an owner to take over a base receipt's key and then floor it away,
 * the changes would no longer show the base row was replaced.)
 *
 * Invariants:
 * - Both sides come in dump order: kinds in turn, each strictly increasing in its SQLite
 *   key order (ids and client ids as UTF-8 bytes, index keys as bytes). Each side is
 *   checked for it as it is read, so a side out of order fails (INTERNAL for the changes,
 *   SNAPSHOT_INVALID for the base) rather than merging wrong; two such sides merged on
 *   the same order give an output in that order.
 * - A base part's records are counted as they are scanned and checked against its header
 *   once it is done (its checksum and the snapshot's combined hash were checked when it
 *   was read).
 * - Memory: one base part and one chunk of changes, and one chunk out (bounded as a
 *   dump's chunks are), plus what the base's reader prefetches.
 */
export class MergedDump {
  private readonly baseParts: AsyncIterator<EncodedSnapshotPayload>;
  private readonly chunks: AsyncGenerator<SnapshotChunk>;
  private closed = false;
  /** The client and owner whose floor `belowFloor` looked up last, and that floor. */
  private floorClient: string | null = null;
  private floorOwner: string | null = null;
  private floor = 0;

  constructor(
    base: AsyncIterable<EncodedSnapshotPayload>,
    private readonly changes: DumpCursor,
    /** The highest floorSeq among the changes' receipts of a client and owner (0: none). */
    private readonly floorOf: (clientId: string, owner: string | null) => number,
  ) {
    this.baseParts = base[Symbol.asyncIterator]();
    this.chunks = this.merge(new EncodedBase(this.baseParts), new ChangeSide(changes));
  }

  /** The next chunk of the state (rows, or base records still encoded), or null at the end. */
  async next(): Promise<SnapshotChunk | null> {
    if (this.closed) throw new CairnError("LOCAL_CLOSED", "merged dump is closed");
    const step = await this.chunks.next();
    return step.done === true ? null : step.value;
  }

  /** Stops both sides (the base's prefetches are dropped); idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.changes.close();
    // A generator still running (a next() in flight) cannot be returned; its side ends with its owner.
    void this.baseParts.return?.()?.catch(() => undefined);
  }

  private async *merge(base: EncodedBase, changes: ChangeSide): AsyncGenerator<SnapshotChunk> {
    for (const kind of KINDS) {
      const out = new Output(kind);
      for (;;) {
        // Awaited only when a side must read on: most records cost no turn of the loop.
        const fromBase = (base.atRecord || (await base.load())) && base.scanner.kind === kind;
        const change = changes.current(kind) ?? (await changes.load(kind));
        if (!fromBase && change === null) break;
        const comparison = !fromBase ? 1 : change === null ? -1 : base.compareWith(change);
        if (comparison < 0) {
          const scanner = base.scanner;
          if (kind !== "receipts") out.encoded(scanner.payload, scanner.start, scanner.end);
          else if (!this.belowFloor(scanner.receipt!)) out.row(scanner.receipt!);
          base.step();
        } else {
          // On a tie the change replaces the base's record.
          if (comparison === 0) base.step();
          changes.step();
          if (!isRemoval(kind, change!)) out.row(change!);
        }
        for (let chunk = out.take(); chunk !== undefined; chunk = out.take()) yield chunk;
      }
      out.end();
      for (let chunk = out.take(); chunk !== undefined; chunk = out.take()) yield chunk;
    }
  }

  /** A base receipt the changes acknowledged away (the receipts come by client: one lookup per client and owner). */
  private belowFloor(receipt: ClientReceipt): boolean {
    const owner = receipt.owner ?? null;
    if (receipt.clientId !== this.floorClient || owner !== this.floorOwner) {
      this.floorClient = receipt.clientId;
      this.floorOwner = owner;
      this.floor = this.floorOf(receipt.clientId, owner);
    }
    return receipt.seq < this.floor;
  }
}

type Kind = DumpChunk["kind"];
type Row = DumpChunk["rows"][number];

const KINDS: readonly Kind[] = ["documents", "indexEntries", "receipts"];

/** Each kind's dump order: its SQLite key (DumpCursor's ORDER BY). */
const ORDER: { readonly [K in Kind]: (a: Extract<DumpChunk, { kind: K }>["rows"][number], b: Extract<DumpChunk, { kind: K }>["rows"][number]) => number } = {
  documents: (a: DocumentRevision, b: DocumentRevision) => compareStrings(a.id, b.id),
  indexEntries: (a: IndexUpdate, b: IndexUpdate) => a.indexId - b.indexId || compareBytes(a.key, b.key),
  receipts: (a: ClientReceipt, b: ClientReceipt) => compareStrings(a.clientId, b.clientId) || a.seq - b.seq,
};

function isRemoval(kind: Kind, row: Row): boolean {
  if (kind === "documents") return (row as DocumentRevision).value === null;
  if (kind === "indexEntries") return (row as IndexUpdate).docId === null;
  return false;
}

/**
 * The base side: its parts in turn, a scanner on the current record. `scanner` is
 * readable while `atRecord` (else `load()` first); `step()` moves past the record.
 */
class EncodedBase {
  scanner!: RecordScanner;
  atRecord = false;
  private part: EncodedSnapshotPayload | null = null;
  private over = false;
  private readonly counts = { documents: 0, indexEntries: 0, receipts: 0 };
  /** The record before the current one (its part's payload and key), for the order check. */
  private previous: { kind: Kind; payload: Buffer; keyStart: number; keyEnd: number; indexId: number; receipt: ClientReceipt | null } | null = null;

  constructor(private readonly parts: AsyncIterator<EncodedSnapshotPayload>) {}

  /** Reads parts until `scanner` is on a record (true) or every part is read (false). */
  async load(): Promise<boolean> {
    while (!this.atRecord) {
      if (this.over) return false;
      if (this.part !== null) this.checkCounts(this.part);
      const step = await this.parts.next();
      if (step.done === true) {
        this.over = true;
        this.part = null;
        return false;
      }
      this.part = step.value;
      this.scanner = new RecordScanner(step.value.payload);
      this.counts.documents = this.counts.indexEntries = this.counts.receipts = 0;
      this.advance();
    }
    return true;
  }

  step(): void {
    this.remember();
    this.advance();
  }

  /** The current record against a change of the same kind, in dump order. */
  compareWith(change: Row): number {
    const scanner = this.scanner;
    switch (scanner.kind) {
      case "documents":
        return compareUtf8Bytes(scanner.payload, scanner.keyStart, scanner.keyEnd, (change as DocumentRevision).id);
      case "indexEntries":
        return scanner.indexId - (change as IndexUpdate).indexId || compareByteRange(scanner.payload, scanner.keyStart, scanner.keyEnd, (change as IndexUpdate).key);
      case "receipts":
        return ORDER.receipts(scanner.receipt!, change as ClientReceipt);
    }
  }

  private advance(): void {
    const part = this.part!;
    try {
      this.atRecord = this.scanner.next();
    } catch (error) {
      throw snapshotPartInvalid(part.header, `payload is malformed: ${String(error)}`, error);
    }
    if (!this.atRecord) return;
    this.counts[this.scanner.kind]++;
    this.checkOrder(part);
  }

  private remember(): void {
    const { kind, payload, keyStart, keyEnd, indexId, receipt } = this.scanner;
    this.previous = { kind, payload, keyStart, keyEnd, indexId, receipt };
  }

  private checkOrder(part: EncodedSnapshotPayload): void {
    const previous = this.previous;
    const scanner = this.scanner;
    if (previous === null) return;
    let comparison: number;
    if (previous.kind !== scanner.kind) {
      comparison = KINDS.indexOf(previous.kind) - KINDS.indexOf(scanner.kind);
    } else if (scanner.kind === "receipts") {
      comparison = ORDER.receipts(previous.receipt!, scanner.receipt!);
    } else {
      comparison =
        (scanner.kind === "indexEntries" ? previous.indexId - scanner.indexId : 0) ||
        compareByteRange(previous.payload, previous.keyStart, previous.keyEnd, scanner.payload.subarray(scanner.keyStart, scanner.keyEnd));
    }
    if (comparison >= 0) throw snapshotPartInvalid(part.header, `${scanner.kind} out of dump order`);
  }

  private checkCounts(part: EncodedSnapshotPayload): void {
    const { header } = part;
    if (this.counts.documents !== header.documents || this.counts.indexEntries !== header.indexEntries || this.counts.receipts !== header.receipts) {
      throw snapshotPartInvalid(header, "record counts differ from the header");
    }
  }
}

/** The changes side: the dump's current chunk and the position in it, checked for order as it is consumed. */
class ChangeSide {
  private at = 0;
  /** undefined: the next chunk is not pulled yet; null: the side is over. */
  private chunk: DumpChunk | null | undefined = undefined;
  private previous: { readonly kind: Kind; readonly row: Row } | null = null;

  constructor(private readonly cursor: DumpCursor) {}

  /** The current row while it is of `kind`, null once the side has no more of `kind`, undefined when `load` must pull a chunk. */
  current(kind: Kind): Row | null | undefined {
    const chunk = this.chunk;
    if (chunk === undefined) return undefined;
    if (chunk === null) return null;
    if (chunk.kind !== kind) {
      if (KINDS.indexOf(chunk.kind) < KINDS.indexOf(kind)) {
        throw new CairnError("INTERNAL", `a restore's merge found ${chunk.kind} after ${kind} in the changes (a dump out of kind order)`);
      }
      return null;
    }
    return this.at < chunk.rows.length ? chunk.rows[this.at]! : undefined;
  }

  /** Pulls chunks until `current(kind)` answers. */
  async load(kind: Kind): Promise<Row | null> {
    for (;;) {
      const row = this.current(kind);
      if (row !== undefined) return row;
      this.chunk = await this.cursor.next();
      this.at = 0;
    }
  }

  step(): void {
    const chunk = this.chunk as DumpChunk;
    const row = chunk.rows[this.at++]!;
    const previous = this.previous;
    if (previous !== null && previous.kind === chunk.kind && (ORDER[chunk.kind] as (a: Row, b: Row) => number)(previous.row, row) >= 0) {
      throw new CairnError("INTERNAL", `a restore's merge found ${chunk.kind} out of dump order in the changes`);
    }
    this.previous = { kind: chunk.kind, row };
  }
}

/**
 * The merge's output of one kind: runs of base records still encoded, and rows, in the
 * order they were given, as chunks bounded as a dump's are.
 */
class Output {
  private rows: Row[] = [];
  private rowBytes = 0;
  private run: { payload: Buffer; start: number; end: number; count: number } | null = null;
  private readonly finished: SnapshotChunk[] = [];

  constructor(private readonly kind: Kind) {}

  /** A base record, [start, end) of `payload`: joins the current run when it follows it. */
  encoded(payload: Buffer, start: number, end: number): void {
    const run = this.run;
    if (run !== null && run.payload === payload && run.end === start && end - run.start <= LOCAL_DUMP_CHUNK_BYTES_MAX) {
      run.end = end;
      run.count++;
      return;
    }
    this.finishRows();
    this.finishRun();
    this.run = { payload, start, end, count: 1 };
  }

  row(row: Row): void {
    this.finishRun();
    this.rows.push(row);
    this.rowBytes += dumpRowBytes(this.kind, row);
    if (this.rows.length >= LOCAL_DUMP_ROWS_PER_CHUNK || this.rowBytes >= LOCAL_DUMP_CHUNK_BYTES_MAX) this.finishRows();
  }

  /** The next chunk finished, handed over once. */
  take(): SnapshotChunk | undefined {
    return this.finished.shift();
  }

  /** Finishes what is pending (then `take` the rest). */
  end(): void {
    this.finishRows();
    this.finishRun();
  }

  private finishRun(): void {
    const run = this.run;
    if (run === null) return;
    this.finished.push({ kind: this.kind, encoded: run.payload.subarray(run.start, run.end), count: run.count });
    this.run = null;
  }

  private finishRows(): void {
    if (this.rows.length === 0) return;
    this.finished.push({ kind: this.kind, rows: this.rows } as DumpChunk);
    this.rows = [];
    this.rowBytes = 0;
  }
}

/** `payload[start, end)` against `b` in memcmp order (compareBytes without a view per comparison). */
function compareByteRange(payload: Uint8Array, start: number, end: number, b: Uint8Array): number {
  const length = Math.min(end - start, b.length);
  for (let at = 0; at < length; at++) {
    const x = payload[start + at]!;
    const y = b[at]!;
    if (x !== y) return x - y;
  }
  return end - start - b.length;
}

/**
 * UTF-8 bytes `payload[start, end)` against the text `b` in UTF-8 byte order, without
 * decoding or encoding either in the common case: while `b` is ASCII its code units are
 * its bytes; at its first non-ASCII unit the rest is compared as text.
 */
function compareUtf8Bytes(payload: Buffer, start: number, end: number, b: string): number {
  const length = Math.min(end - start, b.length);
  for (let at = 0; at < length; at++) {
    const y = b.charCodeAt(at);
    if (y >= 0x80) return compareStrings(payload.toString("utf8", start + at, end), b.slice(at));
    const x = payload[start + at]!;
    if (x !== y) return x - y;
  }
  // Equal so far, and all of it ASCII: the shorter one sorts first.
  return end - start - b.length;
}
