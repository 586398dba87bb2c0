import { type Clock, hasErrorCode } from "../base/index.js";
import type { Manifest } from "../manifest/index.js";
import type { ShardEngine } from "../shard/index.js";
import { OwnershipPlanner } from "./OwnershipPlanner.js";
import type { FleetBeat } from "./PeerDiscovery.js";
import type { ShardRoles } from "./ShardRoles.js";

export interface FleetBalancerOptions {
  readonly engines: readonly ShardEngine[];
  readonly roles: ShardRoles;
  readonly nodeId: string;
  readonly clock: Clock;
  /** The clock skew takeovers tolerate: a lease counts as lapsed only this long after its expiry. */
  readonly maxClockSkewMs: number;
  readonly log: (line: string) => void;
  readonly onError: (error: unknown) => void;
  /**
   * Asks for an extra beat in `delayMs` (before the next regular one): when a dead node's
   * lease lapses, so its shards move at once rather than up to a beat later.
   */
  readonly beatIn?: (delayMs: number) => void;
}

/** What the balancer saw on its last beat (health, `cairn inspect`). */
export interface FleetView {
  /** The live nodes, this one included when it is live, sorted. */
  readonly liveNodeIds: readonly string[];
  /** Per shard: the node whose lease is live, or null. */
  readonly owners: readonly (string | null)[];
  /** Per shard: the node that should write it (rendezvous over the live set), or null. */
  readonly targets: readonly (string | null)[];
  readonly beats: number;
}

/**
 * A fleet node's balancer (DESIGN.md §9 "Fleet"): on every presence beat it reads each
 * shard's manifest (a GET of each shard it does not write), works out who holds a live
 * lease, asks the damped OwnershipPlanner what this node should do, and has the role
 * machine do it — acquire a shard whose lease lapsed or was handed over, hand over
 * (drain, clear the lease) one that should be another live node's.
 *
 * The live set is the fleet nodes whose presence entry is live (this one while its own
 * is). A lease holder whose presence lapsed (killed, cut off) is no target any more: each
 * of its shards moves to its new target as soon as that shard's own lease lapses, not
 * once the last of the node's leases has. Nodes of other roles (replicas, standbys, plain
 * writers) are no fleet members: their leases count as owners, never as targets.
 *
 * Invariants:
 * - The balancer decides nothing about safety: the lease CAS keeps two nodes from writing
 *   one shard whatever two planners say; a lost race is LEASE_HELD and is not an error.
 * - A node whose own entry is not live (it cannot reach the bucket, or another process
 *   uses its id) does not count itself live: it acquires nothing, and hands over what it
 *   writes once the live set of the others is stable.
 * - Beats never overlap (PeerDiscovery awaits each); acquires and hand-overs run in the
 *   background, and the role machine joins a repeated request to the running one.
 */
export class FleetBalancer {
  private readonly planner = new OwnershipPlanner();
  private last: FleetView;

  constructor(private readonly options: FleetBalancerOptions) {
    this.last = { liveNodeIds: [], owners: options.engines.map(() => null), targets: options.engines.map(() => null), beats: 0 };
  }

  get view(): FleetView {
    return this.last;
  }

  async beat(beat: FleetBeat): Promise<void> {
    const { engines, roles, nodeId, clock } = this.options;
    const manifests = await Promise.all(engines.map((engine) => (engine.state.kind === "writing" ? engine.manifestCurrent : engine.refreshManifest())));
    const nowMs = clock.nowMs();
    const owners = manifests.map((manifest, shard) => this.liveOwner(manifest, shard, nowMs));
    const live = new Set(beat.others.filter((entry) => entry.role === "fleet").map((entry) => entry.nodeId));
    if (beat.selfLive) live.add(nodeId);
    const liveNodeIds = [...live].sort();
    const plan = this.planner.plan({ self: nodeId, liveNodeIds, owners });
    this.last = { liveNodeIds, owners, targets: this.planner.currentTargets(), beats: this.last.beats + 1 };
    for (const shard of plan.acquire) {
      const role = roles.role(shard);
      if (role !== "following" && role !== "fenced") continue;
      void roles.acquire(shard).then(
        () => this.options.log(`shard ${shard}: this node writes it now (epoch ${engines[shard]!.manifestCurrent.epoch}); live nodes ${liveNodeIds.join(", ")}`),
        (error: unknown) => {
          if (!hasErrorCode(error, "LEASE_HELD")) this.options.onError(error);
        },
      );
    }
    this.beatWhenALeaseLapses(manifests, owners, live, nowMs);
    for (const shard of plan.handOver) {
      if (roles.role(shard) !== "writing") continue;
      this.options.log(`shard ${shard}: handing it over to ${this.last.targets[shard] ?? "its target"} (live nodes ${liveNodeIds.join(", ")})`);
      void roles.handOver(shard).catch((error: unknown) => this.options.onError(error));
    }
  }

  /**
   * A shard held by a node whose presence is gone (it died or was cut off) is acquired on
   * the first beat after its lease lapses: ask for that beat at the lapse, so failover
   * takes the lease TTL plus the clock skew, not up to a beat more.
   */
  private beatWhenALeaseLapses(manifests: readonly Manifest[], owners: readonly (string | null)[], present: ReadonlySet<string>, nowMs: number): void {
    if (this.options.beatIn === undefined) return;
    let soonestMs = Number.POSITIVE_INFINITY;
    owners.forEach((owner, shard) => {
      if (owner === null || owner === this.options.nodeId || present.has(owner)) return;
      soonestMs = Math.min(soonestMs, manifests[shard]!.leaseExpiresAt + this.options.maxClockSkewMs + 1 - nowMs);
    });
    if (Number.isFinite(soonestMs)) this.options.beatIn(Math.max(0, soonestMs));
  }

  /**
   * Who holds `shard`'s lease now, or null when nobody does (none was taken, it was
   * handed over, or it lapsed more than the clock skew ago). This node's own lease counts
   * only while it writes: one left behind by its previous run, or by a poisoned engine,
   * is one it may take again at once.
   */
  private liveOwner(manifest: Manifest, shard: number, nowMs: number): string | null {
    const writer = manifest.writer;
    if (writer === null) return null;
    if (writer.nodeId === this.options.nodeId) return this.options.engines[shard]!.state.kind === "writing" ? writer.nodeId : null;
    return nowMs > manifest.leaseExpiresAt + this.options.maxClockSkewMs ? null : writer.nodeId;
  }
}
