import { invalidArgument, LOCAL_OVERLAY_BYTES_MAX, LOCAL_OVERLAY_ROWS_MAX } from "../base/index.js";

/** What a budget asks of a local store that joined it. */
export interface OverlayBudgetMember {
  /** Rows and bytes the store's overlay holds unfolded now. */
  readonly unfoldedRows: number;
  readonly unfoldedBytes: number;
  /** Starts a fold of what the store holds, if it can start one now. */
  foldNow(): void;
  /** Lets the store's `room()` waiters look again. */
  wakeRoomWaiters(): void;
}

export interface OverlayBudgetLimits {
  /** Unfolded rows all members together may hold (default LOCAL_OVERLAY_ROWS_MAX). */
  readonly rowsMax?: number;
  /** Bytes of those rows' values, ids and keys (default LOCAL_OVERLAY_BYTES_MAX). */
  readonly bytesMax?: number;
}

/**
 * Share of the budget above which every member folds what it holds, whatever its own
 * fold thresholds: one store alone folds at LOCAL_FOLD_MIN_ROWS (40% of the default row
 * bound), so several stores sharing the budget fold no later than one would.
 */
const FOLD_ALL_FRACTION = 0.4;

/**
 * The memory every local store of one node may hold unfolded, together (DESIGN.md §6):
 * a node's RSS is bounded by what it holds in all its overlays, not per shard, so that
 * a node of eight shards does not hold eight times what one shard may.
 *
 * Invariants:
 * - `hasRoomFor` counts every member's overlay: a store waits for room when the node
 *   is full, even if it holds nothing itself; then every member folds (`relieve`), and
 *   every member's waiters look again when any member's overlay shrinks (`released`).
 * - A store leaves the budget when it closes or fails: rows that will never fold do not
 *   hold the others' room forever.
 */
export class OverlayBudget {
  readonly rowsMax: number;
  readonly bytesMax: number;
  private readonly members = new Set<OverlayBudgetMember>();

  constructor(limits: OverlayBudgetLimits = {}) {
    const rowsMax = limits.rowsMax ?? LOCAL_OVERLAY_ROWS_MAX;
    const bytesMax = limits.bytesMax ?? LOCAL_OVERLAY_BYTES_MAX;
    if (!Number.isSafeInteger(rowsMax) || rowsMax < 1) throw invalidArgument(`overlay rowsMax must be a positive integer, not ${String(rowsMax)}`);
    if (!Number.isSafeInteger(bytesMax) || bytesMax < 1) throw invalidArgument(`overlay bytesMax must be a positive integer, not ${String(bytesMax)}`);
    this.rowsMax = rowsMax;
    this.bytesMax = bytesMax;
  }

  /** Unfolded rows of every member. */
  get rows(): number {
    let rows = 0;
    for (const member of this.members) rows += member.unfoldedRows;
    return rows;
  }

  /** Bytes of every member's unfolded rows. */
  get bytes(): number {
    let bytes = 0;
    for (const member of this.members) bytes += member.unfoldedBytes;
    return bytes;
  }

  /** True while the members hold less than the budget with `rows` and `bytes` more. */
  hasRoomFor(rows: number, bytes: number): boolean {
    return this.rows + rows < this.rowsMax && this.bytes + bytes < this.bytesMax;
  }

  /** True once the members hold enough that each should fold what it holds. */
  get foldAllDue(): boolean {
    return this.rows >= this.rowsMax * FOLD_ALL_FRACTION || this.bytes >= this.bytesMax * FOLD_ALL_FRACTION;
  }

  /** Adds a store; returns how it leaves. */
  join(member: OverlayBudgetMember): () => void {
    this.members.add(member);
    return () => {
      if (this.members.delete(member)) this.released();
    };
  }

  /** A member waits for room: every member folds what it can. */
  relieve(): void {
    for (const member of this.members) member.foldNow();
  }

  /** A member's overlay shrank or it left: every member's waiters look again. */
  released(): void {
    for (const member of [...this.members]) member.wakeRoomWaiters();
  }
}
