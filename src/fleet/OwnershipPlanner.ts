import {
  CairnError,
  FLEET_HANDOVER_STABLE_BEATS,
  FLEET_RESCUE_AFTER_BEATS,
  FLEET_RESCUE_HOLD_BEATS_MAX,
  FLEET_RESCUE_HOLD_BEATS_MIN,
  SHARDS_MAX,
} from "../base/index.js";
import { isNodeId, NODE_ID_FORM } from "../model/index.js";
import { assignment, rendezvousRanking } from "./rendezvous.js";

/**
 * The fleet's damped balancer, as a pure decision (DESIGN.md §9 "Fleet"): fed what a node
 * saw on one beat — the live nodes, each shard's live lease holder, itself — it says which
 * shards this node should acquire and which it should hand over now. It reads no clock
 * and does no I/O; the node's beat reads the bucket, calls `plan`, and its shard roles
 * carry the plan out. Each node runs its own planner; none talks to another.
 *
 * The rules, per shard, with target = the rendezvous owner over the live set:
 * - **Acquire** a shard that has no live owner when this node is its acquirer: its target
 *   on the first FLEET_RESCUE_AFTER_BEATS (K) beats it is unowned — not damped, so a dead
 *   owner's shard moves on the first beat its lease is seen lapsed. If the target has not
 *   taken it by then (it is stuck: live, but not acquiring), the acquirer becomes the
 *   second node of its rendezvous ranking for the next K beats, then the third, …
 *   wrapping round to the target, so a shard stays unowned no more than K beats per stuck
 *   node. The count restarts when the shard's target changes (a new target gets its own
 *   K beats) and stops while no node is live.
 * - **Hand over** a shard this node owns whose target is another live node, only once the
 *   live set has been the same on FLEET_HANDOVER_STABLE_BEATS consecutive beats (so the
 *   target was live on each of them). A flapping node never produces two equal beats, so it
 *   causes no hand-over; while it flaps no shard is rebalanced at all. A shard whose owner
 *   is a node no longer live is not touched: it is acquired once its lease lapses.
 * - **Rescue hold**: a shard this node took from a stuck target (a rescue) is not handed
 *   back to that target until FLEET_RESCUE_HOLD_BEATS_MIN beats after the rescue; each
 *   further rescue of it from the same target doubles the hold (up to
 *   FLEET_RESCUE_HOLD_BEATS_MAX). Seeing the target own the shard, or the shard's target
 *   change, forgets the rescue. So a recovered target gets its shard back, and one stuck
 *   for good costs its shard K beats without a writer per (growing) hold, not every beat.
 * - With no live node (an empty live set) there is no target: nothing is acquired or
 *   handed over.
 *
 * A plan lists what should be in progress: a shard stays in `acquire` (or `handOver`) on
 * every beat until the observation shows it done, so the caller ignores a shard it is
 * already acquiring or handing over. The plan is advice: the lease CAS is what keeps two
 * nodes from writing one shard, whatever their planners say.
 *
 * Invariants:
 * - Planners fed the same observations since their first beat (each with its own `self`)
 *   never name two nodes to acquire one shard on one beat: a shard has one acquirer per
 *   beat. (A planner with a shorter history — a node that just started — may disagree on
 *   a shard unowned for K beats or more; the lease CAS lets one of them win.)
 * - A node acquires only shards with no live owner, and hands over only shards it owns.
 * - Once the live set stops changing, with targets that take their shards, ownership is
 *   `assignment(numShards, live)` after 3 beats (one to see the live set, one to see it
 *   again and hand over, one to acquire) or, when later, on the beat after the leases of
 *   nodes outside the live set lapse, or after any rescue hold runs out.
 * - Bad input (a malformed node id, a shard count outside 1..SHARDS_MAX or different from
 *   the previous beat's) is INVALID_ARGUMENT and changes no state.
 */

/** What a node saw on one beat. */
export interface OwnershipObservation {
  /** This node's id. */
  readonly self: string;
  /** The nodes live on this beat (this node among them when it is live); order does not matter. */
  readonly liveNodeIds: readonly string[];
  /** Per shard (index = shard), the node whose lease on it is live, or null. */
  readonly owners: readonly (string | null)[];
}

/** What the node should be doing now, each list in ascending shard order. */
export interface OwnershipPlan {
  readonly acquire: readonly number[];
  readonly handOver: readonly number[];
}

interface Rescue {
  /** The target that did not take the shard. */
  readonly from: string;
  /** The beat this node first decided to rescue it in its current unowned streak. */
  readonly atBeat: number;
  readonly holdBeats: number;
}

export class OwnershipPlanner {
  private beat = 0;
  private numShards: number | null = null;
  private liveNodeIds: readonly string[] = [];
  private liveSetKey: string | null = null;
  private stableBeats = 0;
  private targets: readonly (string | null)[] = [];
  private unownedBeats: number[] = [];
  private readonly rescues = new Map<number, Rescue>();

  /** Per shard, the rendezvous owner over the live set of the last beat (empty before one). */
  currentTargets(): readonly (string | null)[] {
    return this.targets;
  }

  plan(observation: OwnershipObservation): OwnershipPlan {
    this.check(observation);
    if (this.numShards === null) {
      this.numShards = observation.owners.length;
      this.unownedBeats = new Array<number>(this.numShards).fill(0);
    }
    this.beat++;
    this.noteLiveSet(observation.liveNodeIds, observation.owners.length);
    const acquire: number[] = [];
    const handOver: number[] = [];
    observation.owners.forEach((owner, shard) => {
      if (owner === null) {
        if (this.acquireUnowned(shard, observation.self)) acquire.push(shard);
        return;
      }
      this.unownedBeats[shard] = 0;
      if (this.handOverOwned(shard, owner, observation.self)) handOver.push(shard);
    });
    return { acquire, handOver };
  }

  private noteLiveSet(liveNodeIds: readonly string[], numShards: number): void {
    const live = [...new Set(liveNodeIds)].sort();
    const key = live.join(",");
    if (key === this.liveSetKey) {
      this.stableBeats++;
    } else {
      this.liveSetKey = key;
      this.liveNodeIds = live;
      this.stableBeats = 1;
      const targets = assignment(numShards, live);
      // A new target gets its own K beats before anyone rescues the shard from it.
      targets.forEach((target, shard) => {
        if (target !== this.targets[shard]) this.unownedBeats[shard] = 0;
      });
      this.targets = targets;
    }
  }

  /**
   * Whether this node should acquire `shard`, which has no live owner. Its acquirer is the
   * node of rank ⌊(beats unowned under this target − 1) / K⌋ in its rendezvous ranking.
   */
  private acquireUnowned(shard: number, self: string): boolean {
    const target = this.targets[shard] ?? null;
    if (target === null) return false;
    const unownedBeats = ++this.unownedBeats[shard]!;
    const rank = Math.floor((unownedBeats - 1) / FLEET_RESCUE_AFTER_BEATS) % this.liveNodeIds.length;
    const acquirer = rank === 0 ? target : rendezvousRanking(shard, this.liveNodeIds)[rank]!;
    if (acquirer !== self) return false;
    if (acquirer !== target) this.noteRescue(shard, target, unownedBeats);
    return true;
  }

  private noteRescue(shard: number, target: string, unownedBeats: number): void {
    const previous = this.rescues.get(shard);
    const streakStart = this.beat - unownedBeats + 1;
    if (previous !== undefined && previous.from === target && previous.atBeat >= streakStart) return;
    const holdBeats =
      previous !== undefined && previous.from === target ? Math.min(previous.holdBeats * 2, FLEET_RESCUE_HOLD_BEATS_MAX) : FLEET_RESCUE_HOLD_BEATS_MIN;
    this.rescues.set(shard, { from: target, atBeat: this.beat, holdBeats });
  }

  /** Whether this node should hand over `shard`, whose lease `owner` holds. */
  private handOverOwned(shard: number, owner: string, self: string): boolean {
    const target = this.targets[shard] ?? null;
    const rescue = this.rescues.get(shard);
    if (rescue !== undefined && (owner === rescue.from || target !== rescue.from)) this.rescues.delete(shard);
    if (owner !== self || target === null || target === self) return false;
    if (this.stableBeats < FLEET_HANDOVER_STABLE_BEATS) return false;
    const held = this.rescues.get(shard);
    return held === undefined || this.beat - held.atBeat >= held.holdBeats;
  }

  private check(observation: OwnershipObservation): void {
    const { self, liveNodeIds, owners } = observation;
    checkNodeId(self, "self");
    for (const nodeId of liveNodeIds) checkNodeId(nodeId, "a live node id");
    for (const owner of owners) if (owner !== null) checkNodeId(owner, "a shard's owner");
    if (owners.length < 1 || owners.length > SHARDS_MAX) {
      throw new CairnError("INVALID_ARGUMENT", `an observation covers 1..${SHARDS_MAX} shards, got ${owners.length}`);
    }
    if (this.numShards !== null && owners.length !== this.numShards) {
      throw new CairnError("INVALID_ARGUMENT", `this planner plans ${this.numShards} shards, got an observation of ${owners.length}; a new layout needs a new planner`);
    }
  }
}

function checkNodeId(nodeId: unknown, what: string): void {
  if (!isNodeId(nodeId)) throw new CairnError("INVALID_ARGUMENT", `${what} must be ${NODE_ID_FORM}, got ${JSON.stringify(nodeId)}`);
}
