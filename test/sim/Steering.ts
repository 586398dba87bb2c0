/**
 * How a simulated writer node decides on each beat which shards to take and which to give
 * up, and does it: by the script (ScriptedOwnership) or by the fleet node's own parts
 * (FleetBalancer over ShardRoles). Both take plain values and callbacks, not the
 * simulation.
 */
import type { Clock } from "../../src/base/clock.js";
import { FleetBalancer, ShardRoles, type NodeEntry } from "../../src/fleet/index.js";
import { LeaseWatcher } from "../../src/replica/LeaseWatcher.js";
import type { EngineEvent, ShardEngine } from "../../src/shard/ShardEngine.js";
import type { OwnershipPolicy } from "./ScriptedOwnership.js";

export interface Steering {
  beat(): Promise<void>;
  /** Every event of the writer's engines, in order. */
  engineEvent(event: EngineEvent): void;
}

export interface SteeredWriter {
  readonly nodeId: string;
  /** Per shard. */
  readonly engines: readonly ShardEngine[];
  /** The node's own (skewed) clock. */
  readonly clock: Clock;
  /** The largest clock skew a takeover tolerates: a lease lapsed only this long after its expiry. */
  readonly maxClockSkewMs: number;
  /** An acquire or hand-over failed (lease held, fenced, injected faults: tried again on a later beat). */
  readonly onError: (error: unknown) => void;
}

/**
 * Asks `policy` with what this node sees — who writes each shard (itself only while its
 * engine writes; a lease naming it that its engine does not hold is a previous process's,
 * free to take) — hands over with `relinquish`, and acquires as LeaseWatcher does: once
 * the lease lapsed by this node's clock, with the skew bound, or was cleared.
 */
export function scriptSteering(writer: SteeredWriter, policy: OwnershipPolicy, liveNodeIds: () => readonly string[]): Steering {
  const owners = () =>
    writer.engines.map((engine) => {
      if (engine.state.kind === "writing") return writer.nodeId;
      const named = engine.manifestCurrent.writer?.nodeId ?? null;
      return named === writer.nodeId ? null : named;
    });
  const handOver = (shard: number) => writer.engines[shard]!.relinquish().catch(writer.onError);
  const takeOver = async (shard: number) => {
    const engine = writer.engines[shard]!;
    try {
      const manifest = await engine.refreshManifest();
      if (LeaseWatcher.lapsed(manifest, writer.nodeId, writer.clock.nowMs(), writer.maxClockSkewMs)) await engine.acquire();
    } catch (error) {
      writer.onError(error);
    }
  };
  return {
    beat: async () => {
      const plan = policy({ self: writer.nodeId, liveNodeIds: liveNodeIds(), owners: owners() });
      await Promise.all([...plan.handOver.map(handOver), ...plan.acquire.map(takeOver)]);
    },
    engineEvent: () => undefined,
  };
}

/**
 * The fleet node's own parts: FleetBalancer (the damped rendezvous planner over the live
 * set and the manifests' live leases) carried out by ShardRoles. The live set is given:
 * presence entries live for a few beats are made up for the other live nodes.
 */
export function plannerSteering(writer: SteeredWriter, deploymentId: string, liveNodeIds: () => readonly string[], beatMs: number): Steering {
  const roles = new ShardRoles({ engines: writer.engines, nodeId: writer.nodeId, clock: writer.clock });
  const balancer = new FleetBalancer({
    engines: writer.engines,
    roles,
    nodeId: writer.nodeId,
    clock: writer.clock,
    maxClockSkewMs: writer.maxClockSkewMs,
    log: () => undefined,
    onError: writer.onError,
  });
  const entry = (nodeId: string): NodeEntry => {
    const nowMs = Math.floor(writer.clock.nowMs());
    return { version: 1, nonce: "simulated", deploymentId, nodeId, url: null, role: "fleet", expiresAt: nowMs + beatMs * 3, updatedAt: nowMs };
  };
  return {
    beat: async () => {
      const live = liveNodeIds();
      try {
        await balancer.beat({ selfLive: live.includes(writer.nodeId), others: live.filter((nodeId) => nodeId !== writer.nodeId).map(entry) });
      } catch (error) {
        writer.onError(error);
      }
    },
    engineEvent: (event) => roles.engineEvent(event),
  };
}
