import type { Clock } from "../base/index.js";
import type { EngineEvent } from "../shard/index.js";

/**
 * The last snapshot and the last GC run of each shard, as this node's engines reported
 * them (docs/admin-api.md `Deployment.shards[].lastSnapshot`, `lastGc`). Only the writer
 * of a shard snapshots and collects it, so a shard this node has not written since it
 * started has neither (null): the dashboard asks that shard's writer.
 *
 * Invariants:
 * - Times are this node's wall clock (the injected Clock) when the event came: a
 *   snapshot's time is when its pointer landed in the manifest, a GC run's when it ended.
 * - Memory is one record per shard and kind; events of other types are ignored.
 */
export interface SnapshotRecord {
  /** Ms since the epoch. */
  readonly time: number;
  /** The snapshot holds the shard's state through this seqno. */
  readonly seqno: number;
}

export interface GcRecord {
  /** Ms since the epoch. */
  readonly time: number;
  readonly segmentsDeleted: number;
  /** The manifest's logStart after the run. */
  readonly logStartAfter: number;
  /** The lowest seqno a live follower still needed, when that (not the snapshot) held the run back; else null. */
  readonly heldBackBy: number | null;
}

export interface ShardMaintenance {
  readonly lastSnapshot: SnapshotRecord | null;
  readonly lastGc: GcRecord | null;
}

const NONE: ShardMaintenance = { lastSnapshot: null, lastGc: null };

export class MaintenanceLog {
  private readonly shards = new Map<number, ShardMaintenance>();

  constructor(private readonly clock: Clock) {}

  /** Feed every engine event here; "snapshot" and "gc" are kept. */
  engineEvent(event: EngineEvent): void {
    switch (event.type) {
      case "snapshot":
        this.shards.set(event.shard, { ...this.of(event.shard), lastSnapshot: { time: this.clock.nowMs(), seqno: event.pointer.seqno } });
        return;
      case "gc": {
        const { segmentsDeleted, logStartAfter, heldBackBy } = event.report;
        this.shards.set(event.shard, { ...this.of(event.shard), lastGc: { time: this.clock.nowMs(), segmentsDeleted, logStartAfter, heldBackBy } });
        return;
      }
      default:
        return;
    }
  }

  /** The shard's last snapshot and GC run here (nulls for none). */
  of(shard: number): ShardMaintenance {
    return this.shards.get(shard) ?? NONE;
  }
}
