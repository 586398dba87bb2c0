import type { OwnershipObservation, OwnershipPlan } from "../../src/fleet/index.js";

/**
 * Who should write which shard, as the simulation's writer nodes ask it on every beat.
 *
 * The question has the shape of the fleet's OwnershipPlanner (one node's observation in,
 * the shards to acquire and to hand over out), so a simulated node can be driven by the
 * script or by the planner. Here the answer comes from a seeded script of moves: a
 * graceful hand-over of one shard, or a node declared gone (crashed, or paused past its
 * lease) whose shards the others should take. The live set it keeps is also what the
 * planner-driven nodes are told.
 */
export type OwnershipPolicy = (observation: OwnershipObservation) => OwnershipPlan;

export class ScriptedOwnership {
  /** Per shard, the node the script wants to write it. */
  private readonly desired: string[];
  private readonly gone = new Set<string>();

  constructor(
    readonly nodeIds: readonly string[],
    shards: number,
  ) {
    this.desired = Array.from({ length: shards }, () => nodeIds[0]!);
  }

  get liveNodeIds(): readonly string[] {
    return this.nodeIds.filter((nodeId) => !this.gone.has(nodeId));
  }

  desiredOwner(shard: number): string {
    return this.desired[shard]!;
  }

  /** The policy every node asks: acquire what the script gives it, hand over the rest. */
  readonly decide: OwnershipPolicy = ({ self, owners }) => ({
    acquire: owners.flatMap((owner, shard) => (this.desired[shard] === self && owner !== self ? [shard] : [])),
    handOver: owners.flatMap((owner, shard) => (owner === self && this.desired[shard] !== self ? [shard] : [])),
  });

  /** A graceful move of one shard to another live node. */
  moveShard(shard: number, to: string): void {
    this.desired[shard] = to;
  }

  /** `nodeId` stopped answering: its shards go to a live node until it is back. */
  declareGone(nodeId: string, successor: string): void {
    this.gone.add(nodeId);
    for (let shard = 0; shard < this.desired.length; shard++) if (this.desired[shard] === nodeId) this.desired[shard] = successor;
  }

  declareBack(nodeId: string): void {
    this.gone.delete(nodeId);
  }
}
