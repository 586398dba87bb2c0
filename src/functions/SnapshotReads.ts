import { CairnError } from "../base/index.js";
import { compareBytes, type DocumentId, successorKey } from "../model/index.js";
import type { LocalStore } from "../local/index.js";
import type { PendingRevision, PendingStamp, PendingView } from "../shard/index.js";
import type { Catalog, IndexInfo, TableInfo } from "./catalog.js";
import { decodeDocument, type DocumentObject } from "./documents.js";
import type { PendingRow, PendingWrites } from "./PendingWrites.js";
import type { ReadRecorder } from "./ReadRecorder.js";
import type { ResultGuard } from "./ResultGuard.js";
import { idKeyBytes, idOfKeyBytes } from "./documentIdRange.js";
import { ROUTED_BY_ID } from "./scheduledFunctions.js";
import { crossShard, laneOfId } from "./routing.js";

/**
 * One function run's reads: the local stores of the deployment's lanes (one per shard)
 * at `readTs`, merged with the run's own pending writes (mutations), each read recorded
 * exactly. Keys are the same in every lane (a document lives in exactly one), so a scan
 * over several lanes is their ordered merge and records one range, as with one lane.
 *
 * Invariants:
 * - A scan with a limit returns the first `limit` rows of the merged view. Each lane is
 *   asked for `limit + pending.size` rows, because each pending document hides at most
 *   one stored row of an index (its old entry), so enough survive the merge.
 * - A mutation is confined to its lane: a read that needs another lane (a document that
 *   lives there, a scan that is not fixed to the mutation's lane) fails with
 *   CROSS_SHARD_MUTATION before it reads anything.
 */
export interface ScanResult {
  readonly rows: readonly PendingRow[];
  /** The whole range was read: fewer rows than the limit exist in it. */
  readonly complete: boolean;
}

/** A mutation's lane: everything it touches must live there. */
export interface Confinement {
  readonly lane: number;
  /** The mutation's path, for errors. */
  readonly path: string;
}

export class SnapshotReads {
  private finished = false;
  /**
   * Why a read through the writer's pending state refused (a WRITE_CONFLICT the handler
   * may have caught): "stale", re-run at once; "pending", re-run once the writes in
   * flight are durable. Null: no read refused.
   */
  refusal: "stale" | "pending" | null = null;
  /** A subscription run's (FunctionRuntime `describe`): hands results out guarded, counts reads. */
  guard: ResultGuard | null = null;
  /**
   * Documents this run read by id, as found (text, ts, pending stamp): a second read of
   * one (a get, then the patch that re-reads it) neither asks the store again nor records
   * the read twice. Decoded afresh every time: the handler may change what it was given.
   */
  private readonly readById = new Map<DocumentId, { readonly text: string | null; readonly ts: number | null; readonly stamp?: PendingStamp }>();
  /**
   * Asked before a mutation's first read by id (set by FunctionRuntime.prepare for a run
   * with a view of its writer's pending state): undefined, read now; or the snapshot to
   * read at once the runs ahead of this one on that document have queued their writes
   * (null: it stopped waiting; read the one it has).
   */
  firstDocumentTurn: ((id: string) => Promise<{ readonly view: PendingView | null; readonly readTs: number } | null> | undefined) | null = null;
  private snapshotTs: number;
  private pendingView: PendingView | null;

  constructor(
    readonly lanes: readonly LocalStore[],
    readTs: number,
    readonly catalog: Catalog,
    readonly recorder: ReadRecorder,
    readonly pending: PendingWrites | null,
    readonly confinement: Confinement | null = null,
    /** A mutation's view of its lane's pending writes (early lock release), or null. */
    view: PendingView | null = null,
  ) {
    if (lanes.length === 0) throw new CairnError("INTERNAL", "a run reads at least one lane");
    this.snapshotTs = readTs;
    this.pendingView = view;
  }

  /** The snapshot the run reads: later only if it waited for its turn before its first read. */
  get readTs(): number {
    return this.snapshotTs;
  }

  /** The run's view of its lane's pending writes (early lock release), or null. */
  get view(): PendingView | null {
    return this.pendingView;
  }

  /**
   * If this is the run's first read, and it is of a document other runs hold, waits for
   * its turn and moves the run to the snapshot it then gets, which holds their queued
   * writes (it read nothing yet, so no earlier read disagrees). Undefined: read now.
   */
  turnFor(id: unknown): Promise<void> | undefined {
    const turn = this.firstDocumentTurn;
    if (turn === null || typeof id !== "string") return undefined;
    this.firstDocumentTurn = null;
    if (this.recorder.firstReadKey() !== null) return undefined;
    return turn(id)?.then((snapshot) => {
      // Another read of the handler's (two gets at once) went first: stay on its snapshot.
      if (snapshot === null || this.recorder.firstReadKey() !== null) return;
      this.snapshotTs = snapshot.readTs;
      this.pendingView = snapshot.view;
    });
  }

  get laneCount(): number {
    return this.lanes.length;
  }

  /** CROSS_SHARD_MUTATION unless a mutation may touch `lane` (anything goes for a query). */
  checkLane(lane: number | null, what: () => string): void {
    const confinement = this.confinement;
    if (confinement === null || lane === confinement.lane) return;
    throw crossShard(confinement.path, confinement.lane, lane ?? "every", what());
  }

  /**
   * Ends the run: a read or write after the handler returned (a call it did not await)
   * fails instead of reading a snapshot nobody records or writing into a unit already
   * committed.
   */
  finish(): void {
    this.finished = true;
  }

  assertRunning(): void {
    if (this.finished) {
      throw new CairnError("INVALID_ARGUMENT", "ctx.db was used after the function returned; await every database call inside the handler");
    }
  }

  /**
   * The document `id` as this run sees it, and its table; DOCUMENT_ID_INVALID for a bad id.
   * `ts` is the revision's (null for the run's own write, or a pending one: then `stamp`
   * is where the writer puts its ts).
   */
  document(id: unknown): { table: TableInfo; id: DocumentId; document: DocumentObject | null; ts: number | null; stamp?: PendingStamp } {
    this.assertRunning();
    if (this.guard !== null) this.guard.reads++;
    const { table, id: canonical } = this.catalog.tableOfId(id);
    const pending = this.pending?.get(canonical);
    if (pending !== undefined) return { table, id: canonical, document: pending.after === null ? null : structuredClone(pending.after), ts: null };
    const known = this.readById.get(canonical);
    if (known !== undefined) {
      const document = known.text === null ? null : decodeDocument(canonical, known.text);
      return { table, id: canonical, document, ts: known.ts, ...(known.stamp ? { stamp: known.stamp } : {}) };
    }
    const lane = laneOfId(table, canonical, this.lanes.length);
    this.checkLane(lane, () => `document ${canonical} of ${table.name}`);
    this.recorder.countRows(1);
    this.recorder.document(table.number, canonical);
    const revision = this.viewed(canonical);
    if (revision !== undefined) {
      this.readById.set(canonical, { text: revision.value, ts: null, stamp: revision.stamp });
      const document = revision.value === null ? null : decodeDocument(canonical, revision.value);
      return { table, id: canonical, document, ts: null, stamp: revision.stamp };
    }
    const version = this.lanes[lane]!.get(canonical, this.readTs);
    this.readById.set(canonical, { text: version?.value ?? null, ts: version?.ts ?? null });
    if (version === null) return { table, id: canonical, document: null, ts: null };
    return { table, id: canonical, document: decodeDocument(canonical, version.value), ts: version.ts };
  }

  /**
   * The first `limit` rows of `index` in [start, end) in `order`, and the range they cover
   * recorded. `lane`: the one lane the range can hold rows in (routing.laneOfScan), or
   * null for every lane.
   */
  scan(table: TableInfo, index: IndexInfo, start: Uint8Array, end: Uint8Array | null, order: "asc" | "desc", limit: number, lane: number | null = null): ScanResult {
    this.assertRunning();
    if (this.guard !== null) this.guard.reads++;
    if (index.state !== "ready") {
      throw new CairnError("INDEX_NOT_READY", `index ${table.name}.${index.name} is still being backfilled; it answers once every existing document is indexed`, {
        details: { table: table.name, index: index.name },
      });
    }
    // A mutation's scan of a system table routed by id reads its own shard's part: the jobs
    // its shard holds (a query, confined to no shard, reads every shard's).
    const ownPart = lane === null && table.shardKey === ROUTED_BY_ID && this.confinement !== null ? this.confinement.lane : lane;
    const lanes = this.lanes.length === 1 ? 0 : ownPart;
    this.checkLane(lanes, () => `its query of ${table.name}.${index.name}${table.shardKey === null ? "" : ` (not fixed to one ${table.shardKey} by q.eq)`}`);
    if (limit === 0) return { rows: [], complete: false };
    const byId = index.kind === "documents";
    if (this.view !== null && (byId ? this.view.tablePending(table.number) : this.view.indexRangePending(index.id, start, end))) {
      // Ranges read the store alone: one a pending write moves rows into or out of reads
      // only once that write is durable.
      this.refusal ??= "pending";
      throw new CairnError("WRITE_CONFLICT", `${table.name}.${index.name}: writes to this range are in flight; the transaction runs again once they are durable`, {
        details: { table: table.name, index: index.name },
      });
    }
    const pendingRows = this.pending?.rowsIn(table, index, start, end, order) ?? [];
    const fetch = limit + (this.pending?.size ?? 0);
    const scanLane = (local: LocalStore) =>
      byId
        ? local
            .documentScan(table.number, { start: idOfKeyBytes(start), end: end === null ? null : idOfKeyBytes(end) }, this.readTs, order, fetch)
            .map((row) => ({ key: idKeyBytes(row.id), id: row.id, value: row.value }))
        : local.indexScan(index.id, { start, end }, this.readTs, order, fetch);
    const stored = lanes !== null ? scanLane(this.lanes[lanes]!) : mergeLanes(this.lanes.map(scanLane), order, fetch);
    this.recorder.countRows(stored.length);
    const storedRows: (PendingRow & { fromStore: true })[] = [];
    for (const row of stored) {
      if (this.pending?.has(row.id)) continue;
      // A pending revision of a row in an untouched range keeps its key here (moving or
      // deleting it would write this range): its value is the newer one.
      const revision = this.viewed(row.id);
      storedRows.push({ key: row.key, document: decodeDocument(row.id, revision?.value ?? row.value), fromStore: true });
    }
    const rows = merge(storedRows, pendingRows, order, limit);
    const complete = rows.length < limit;
    const last = rows[rows.length - 1]?.key;
    const coveredStart = complete || order === "asc" ? start : last!;
    const coveredEnd = complete || order === "desc" ? end : successorKey(last!);
    if (byId) {
      // The range of the table keyspace covers every returned document already.
      this.recorder.tableRange(table.number, coveredStart, coveredEnd);
    } else {
      this.recorder.indexRange(index.id, coveredStart, coveredEnd);
      for (const row of rows) {
        if ((row as { fromStore?: true }).fromStore) this.recorder.document(table.number, row.document._id);
      }
    }
    return { rows: rows.map(({ key, document }) => ({ key, document })), complete };
  }

  /** The pending revision of `id` the run's view sees (undefined: none, or no view); a stale read is refused. */
  private viewed(id: DocumentId): PendingRevision | undefined {
    if (this.view === null) return undefined;
    try {
      return this.view.document(id);
    } catch (error) {
      this.refusal ??= "stale";
      throw error;
    }
  }
}

/** The first `limit` rows of several lanes' scans (each ordered by key) in key order. */
function mergeLanes<Row extends { readonly key: Uint8Array }>(lanes: readonly (readonly Row[])[], order: "asc" | "desc", limit: number): Row[] {
  const direction = order === "asc" ? 1 : -1;
  const at = lanes.map(() => 0);
  const out: Row[] = [];
  while (out.length < limit) {
    let best = -1;
    for (let lane = 0; lane < lanes.length; lane++) {
      const row = lanes[lane]![at[lane]!];
      if (row !== undefined && (best === -1 || compareBytes(row.key, lanes[best]![at[best]!]!.key) * direction < 0)) best = lane;
    }
    if (best === -1) break;
    out.push(lanes[best]![at[best]!++]!);
  }
  return out;
}

function merge(left: readonly PendingRow[], right: readonly PendingRow[], order: "asc" | "desc", limit: number): PendingRow[] {
  const out: PendingRow[] = [];
  const direction = order === "asc" ? 1 : -1;
  let l = 0;
  let r = 0;
  while (out.length < limit && (l < left.length || r < right.length)) {
    if (r >= right.length || (l < left.length && compareBytes(left[l]!.key, right[r]!.key) * direction < 0)) out.push(left[l++]!);
    else out.push(right[r++]!);
  }
  return out;
}
