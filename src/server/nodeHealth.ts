import type { Clock } from "../base/index.js";
import type { FleetView, NodeRole, ShardRole } from "../fleet/index.js";
import { isLeaseLive } from "../manifest/index.js";
import type { LayoutRetired, ShardTailer } from "../replica/index.js";
import type { ShardEngine } from "../shard/index.js";
import { frontierHeldBack } from "./frontierHeldBack.js";

/** A follower whose copy was last known complete longer ago than this reports "degraded". */
const STALE_AFTER_MS = 10_000;

export interface NodeHealthParts {
  readonly nodeId: string;
  readonly deploymentId: string;
  readonly clock: Clock;
  readonly engines: readonly ShardEngine[];
  readonly tailers: readonly ShardTailer[];
  readonly roles: readonly ShardRole[];
  readonly nodeRole: NodeRole;
  readonly frontierTs: number;
  readonly sessions: number;
  /** Why this node stopped serving its layout, or null while it serves it. */
  readonly retired: LayoutRetired | null;
  /** A fleet node's view of the fleet (its last beat), or null. */
  readonly fleet: FleetView | null;
}

/**
 * What `GET /api/health` answers (DESIGN.md §9): the node's role, each shard's role,
 * writer, epoch and tail, the common frontier and which shard holds it back.
 *
 * - `status`: "ok" — a writer of every shard, or a follower whose copy is fresh and whose
 *   shards' frontiers are within STALE_AFTER_MS of each other; "degraded" — it serves, but
 *   reads may lag (a tail error, a stale copy, a shard without a live writer); "stopped" —
 *   a reshard retired the layout it served (`reason` says why).
 * - `fleet` (a fleet node): the live nodes as its last beat saw them, and per shard its
 *   `target` (the node rendezvous hashing gives it) beside its `writer`.
 * - `frontierHeldBy`: the node reads at the lowest shard frontier, so a commit on another
 *   shard stays invisible until that shard's frontier passes it. This names the shard that
 *   holds reads back, by how long, and whether it has a live writer: a shard without one
 *   holds every read back until a writer or standby takes it over (a replica cannot: only
 *   a fence closes a dead writer's log).
 */
export function nodeHealth(parts: NodeHealthParts) {
  const { clock } = parts;
  const shards = parts.engines.map((engine, index) => {
    const status = parts.tailers[index]!.status();
    const manifest = engine.manifestCurrent;
    return {
      shard: engine.shard,
      state: engine.state.kind,
      role: parts.roles[index]!,
      appliedSeqno: status.appliedSeqno,
      // Through which ts this node knows the shard complete (a writer's idle shard: its clock).
      frontierTs: engine.closedTs,
      lastDataTs: engine.lastDataTs,
      stalenessMs: status.stalenessMs,
      lastError: status.lastError,
      writer: manifest.writer?.nodeId ?? null,
      epoch: manifest.epoch,
      // As this node last read the manifest (a follower re-reads it every manifestRefreshMs).
      leaseExpiresAt: manifest.writer === null ? null : new Date(manifest.leaseExpiresAt).toISOString(),
      writerLive: engine.state.kind === "writing" || isLeaseLive(manifest, clock.nowMs()),
      ...(parts.fleet !== null ? { target: parts.fleet.targets[index] ?? null } : {}),
    };
  });
  const staleness = shards.map((shard) => shard.stalenessMs);
  const stalenessMs = staleness.some((value) => value === null) ? null : Math.max(...(staleness as number[]));
  // A deployment has at least one shard.
  const { pin: lowest, heldBackUs } = frontierHeldBack(shards)!;
  const heldBackMs = Math.round(heldBackUs / 1000);
  const healthy =
    parts.nodeRole === "writer" ||
    (stalenessMs !== null && stalenessMs <= STALE_AFTER_MS && heldBackMs <= STALE_AFTER_MS && shards.every((shard) => shard.lastError === null));
  return {
    status: parts.retired !== null ? "stopped" : healthy ? "ok" : "degraded",
    ...(parts.retired !== null ? { reason: parts.retired.reason } : {}),
    role: parts.nodeRole,
    nodeId: parts.nodeId,
    deploymentId: parts.deploymentId,
    shards,
    frontierTs: parts.frontierTs,
    frontierHeldBy: { shard: lowest.shard, heldBackMs, writer: lowest.writer, writerLive: lowest.writerLive },
    stalenessMs,
    sessions: parts.sessions,
    ...(parts.fleet !== null ? { fleet: { liveNodes: parts.fleet.liveNodeIds, beats: parts.fleet.beats } } : {}),
  };
}
