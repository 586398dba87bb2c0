/**
 * Scenario: a simulated fleet in which every running node has its own OwnershipPlanner
 * and all of them see, on each beat, the same live set and the same lease holders; the
 * simulation carries out their plans as the bucket would (an acquire lands only on a shard
 * with no live lease, first come first served; a hand-over clears the owner's lease), and
 * a node absent from the live set for LEASE_BEATS beats loses its leases. Three nodes over
 * six shards converge to the rendezvous assignment from any start; a fourth node joining
 * moves only its shards and only after two identical beats; a node that dies loses its
 * shards to their new targets on the first beat its leases are seen lapsed; a node that is
 * up one beat and down the next moves nothing; a target that never takes its shard has it
 * rescued by the next node of the ranking and handed back after a hold; and over random
 * sequences of beats no shard is ever named for acquisition by two nodes on one beat, a
 * stable live set converges within a bounded number of beats, and with stuck nodes no
 * shard stays unowned longer than the rescue bound.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FLEET_RESCUE_AFTER_BEATS, FLEET_RESCUE_HOLD_BEATS_MAX, FLEET_RESCUE_HOLD_BEATS_MIN } from "../../src/base/index.js";
import { assignment, OwnershipPlanner, rendezvousRanking, type OwnershipPlan } from "../../src/fleet/index.js";
import { codeOf } from "../support/errorCode.js";

/** Beats a lease outlives its holder's presence in the simulation (a TTL of ~3 beats). */
const LEASE_BEATS = 3;
const K = FLEET_RESCUE_AFTER_BEATS;

const THREE = ["alpha", "beta", "gamma"] as const;
const FOUR = ["alpha", "beta", "gamma", "delta"] as const;
/** Pinned in rendezvous.test.ts. */
const THREE_OWN = ["gamma", "beta", "gamma", "alpha", "gamma", "beta"];
const FOUR_OWN = ["delta", "delta", "gamma", "alpha", "gamma", "beta"];

const NOTHING: OwnershipPlan = { acquire: [], handOver: [] };

/** The bucket and the running nodes of a fleet, one beat at a time. */
class SimulatedFleet {
  readonly owners: (string | null)[];
  /** Nodes that plan every beat but carry out nothing (live, yet never acquiring). */
  readonly stuck = new Set<string>();
  private readonly planners = new Map<string, OwnershipPlanner>();
  private readonly absentBeats = new Map<string, number>();
  /** Per shard, the beats in a row it has been seen with no owner. */
  readonly unownedStreaks: number[];

  constructor(owners: readonly (string | null)[], running: readonly string[]) {
    this.owners = [...owners];
    this.unownedStreaks = owners.map(() => 0);
    for (const nodeId of running) this.start(nodeId);
  }

  start(nodeId: string): void {
    this.planners.set(nodeId, new OwnershipPlanner());
  }

  crash(nodeId: string): void {
    this.planners.delete(nodeId);
  }

  /** One beat: every running node plans on the same observation; the plans are carried out. */
  beat(live: readonly string[]): Map<string, OwnershipPlan> {
    const observed = [...this.owners];
    observed.forEach((owner, shard) => (this.unownedStreaks[shard] = owner === null ? this.unownedStreaks[shard]! + 1 : 0));
    const plans = new Map<string, OwnershipPlan>();
    for (const [nodeId, planner] of this.planners) plans.set(nodeId, planner.plan({ self: nodeId, liveNodeIds: live, owners: observed }));
    const acquirers = new Map<number, string>();
    for (const [nodeId, plan] of plans) {
      for (const shard of plan.acquire) {
        expect(observed[shard], `${nodeId} acquires shard ${shard}, which has an owner`).toBeNull();
        expect(acquirers.get(shard), `two nodes acquire shard ${shard} on one beat`).toBeUndefined();
        acquirers.set(shard, nodeId);
      }
      for (const shard of plan.handOver) expect(observed[shard], `${nodeId} hands over shard ${shard}, which it does not own`).toBe(nodeId);
      if (this.stuck.has(nodeId)) continue;
      for (const shard of plan.handOver) this.owners[shard] = null;
      for (const shard of plan.acquire) this.owners[shard] = nodeId;
    }
    this.lapseLeases(live);
    return plans;
  }

  beats(count: number, live: readonly string[]): void {
    for (let i = 0; i < count; i++) this.beat(live);
  }

  private lapseLeases(live: readonly string[]): void {
    for (const owner of new Set(this.owners)) if (owner !== null && !this.absentBeats.has(owner)) this.absentBeats.set(owner, 0);
    for (const nodeId of this.absentBeats.keys()) {
      const absent = live.includes(nodeId) ? 0 : this.absentBeats.get(nodeId)! + 1;
      this.absentBeats.set(nodeId, absent);
      if (absent >= LEASE_BEATS) this.owners.forEach((owner, shard) => owner === nodeId && (this.owners[shard] = null));
    }
  }
}

function expectNothingPlanned(plans: Map<string, OwnershipPlan>): void {
  for (const [nodeId, plan] of plans) expect({ nodeId, ...plan }).toEqual({ nodeId, ...NOTHING });
}

/** Each node's non-empty plan, for comparing a beat's plans at a glance. */
function planned(plans: Map<string, OwnershipPlan>): Record<string, OwnershipPlan> {
  const result: Record<string, OwnershipPlan> = {};
  for (const [nodeId, plan] of plans) if (plan.acquire.length > 0 || plan.handOver.length > 0) result[nodeId] = plan;
  return result;
}

describe("OwnershipPlanner: three nodes over six shards", () => {
  it("converges to the rendezvous assignment from any starting ownership", () => {
    // "omega" is a dead node still holding leases at the start.
    const ownerArbitrary = fc.constantFrom(null, "alpha", "beta", "gamma", "omega");
    fc.assert(
      fc.property(fc.array(ownerArbitrary, { minLength: 6, maxLength: 6 }), (start) => {
        const fleet = new SimulatedFleet(start, THREE);
        const first = fleet.beat(THREE);
        for (const plan of first.values()) expect(plan.handOver).toEqual([]); // one beat is no stable live set
        // Beat 2 hands over what live nodes should not own, beat 3 acquires it; omega's
        // leases are seen lapsed on beat LEASE_BEATS + 1 and acquired on it.
        fleet.beats(LEASE_BEATS, THREE);
        expect(fleet.owners).toEqual(THREE_OWN);
        expectNothingPlanned(fleet.beat(THREE));
      }),
      { seed: 24, numRuns: 300 },
    );
  });

  it("moves to a 4th node that joins only the shards it targets, and only after two identical beats", () => {
    const fleet = new SimulatedFleet(THREE_OWN, THREE);
    expectNothingPlanned(fleet.beat(THREE));
    fleet.start("delta");
    expectNothingPlanned(fleet.beat(FOUR)); // the live set changed: no hand-over yet
    expect(planned(fleet.beat(FOUR))).toEqual({ gamma: { acquire: [], handOver: [0] }, beta: { acquire: [], handOver: [1] } });
    expect(planned(fleet.beat(FOUR))).toEqual({ delta: { acquire: [0, 1], handOver: [] } });
    expect(fleet.owners).toEqual(FOUR_OWN);
    expectNothingPlanned(fleet.beat(FOUR));
  });

  it("gives a dead node's shards to their new targets on the first beat its leases are seen lapsed", () => {
    const fleet = new SimulatedFleet(FOUR_OWN, FOUR);
    fleet.beats(2, FOUR);
    fleet.crash("delta");
    for (let beat = 1; beat <= LEASE_BEATS; beat++) expectNothingPlanned(fleet.beat(THREE)); // its leases are live
    expect(planned(fleet.beat(THREE))).toEqual({ gamma: { acquire: [0], handOver: [] }, beta: { acquire: [1], handOver: [] } });
    expect(fleet.owners).toEqual(THREE_OWN);
  });

  it("acquires a shard whose lease lapsed on the very beat the live set changes (failover is not damped)", () => {
    const planner = new OwnershipPlanner();
    expect(planner.plan({ self: "gamma", liveNodeIds: FOUR, owners: FOUR_OWN })).toEqual(NOTHING);
    const lapsed = FOUR_OWN.map((owner) => (owner === "delta" ? null : owner));
    expect(planner.plan({ self: "gamma", liveNodeIds: THREE, owners: lapsed })).toEqual({ acquire: [0], handOver: [] });
  });

  it("moves nothing while a node is up one beat and down the next, whether it owns shards or not", () => {
    for (const start of [THREE_OWN, FOUR_OWN]) {
      const fleet = new SimulatedFleet(start, FOUR);
      for (let beat = 0; beat < 40; beat++) expectNothingPlanned(fleet.beat(beat % 2 === 0 ? FOUR : THREE));
      expect(fleet.owners).toEqual(start);
    }
  });

  it("hands nothing over, and acquires nothing, while no node is live; then the targets take their shards at once", () => {
    const start = THREE_OWN.map((owner, shard) => (shard === 0 ? null : owner));
    const fleet = new SimulatedFleet(start, THREE);
    for (let beat = 0; beat < 2 * K + 2; beat++) expectNothingPlanned(fleet.beat([]));
    // Every lease lapsed meanwhile. Beats with no live node are no target's failure to
    // acquire: no rescue follows them, each target takes its own shards.
    expect(fleet.owners).toEqual([null, null, null, null, null, null]);
    expect(planned(fleet.beat(THREE))).toEqual({
      alpha: { acquire: [3], handOver: [] },
      beta: { acquire: [1, 5], handOver: [] },
      gamma: { acquire: [0, 2, 4], handOver: [] },
    });
  });

  it("hands a node's shards to their live targets once the live set is stable, even when the node itself is no longer live", () => {
    const fleet = new SimulatedFleet(FOUR_OWN, FOUR);
    fleet.beat(FOUR);
    expectNothingPlanned(fleet.beat(THREE)); // delta runs, but its presence lapsed
    expect(planned(fleet.beat(THREE))).toEqual({ delta: { acquire: [], handOver: [0, 1] } });
    expect(planned(fleet.beat(THREE))).toEqual({ gamma: { acquire: [0], handOver: [] }, beta: { acquire: [1], handOver: [] } });
  });
});

describe("OwnershipPlanner: a target that does not take its shard", () => {
  const rescuer = rendezvousRanking(0, THREE)[1]!; // gamma is shard 0's target

  /** Beats until `shard` has an owner, with the plans of the beat it was acquired. */
  function beatsUntilOwned(fleet: SimulatedFleet, shard: number): number {
    let beats = 0;
    while (fleet.owners[shard] === null && beats < 10 * K) {
      fleet.beat(THREE);
      beats++;
    }
    return beats;
  }

  /** Beats until the owner of `shard` hands it over. */
  function beatsUntilHandedOver(fleet: SimulatedFleet, shard: number): number {
    let beats = 0;
    while (fleet.owners[shard] !== null && beats < 2 * FLEET_RESCUE_HOLD_BEATS_MAX) {
      fleet.beat(THREE);
      beats++;
    }
    return beats;
  }

  it("is rescued by the next node of the ranking after K beats, held, handed back with a doubling hold, and reset once the target takes it", () => {
    const start = THREE_OWN.map((owner, shard) => (shard === 0 ? null : owner));
    const fleet = new SimulatedFleet(start, THREE);
    fleet.stuck.add("gamma");
    for (let beat = 1; beat <= K; beat++) expect(planned(fleet.beat(THREE))).toEqual({ gamma: { acquire: [0], handOver: [] } });
    expect(planned(fleet.beat(THREE))).toEqual({ [rescuer]: { acquire: [0], handOver: [] } });
    expect(fleet.owners[0]).toBe(rescuer);

    // Held FLEET_RESCUE_HOLD_BEATS_MIN beats from the rescue, then handed back; gamma,
    // still stuck, does not take it, and the rescuer takes it again with twice the hold.
    expect(beatsUntilHandedOver(fleet, 0)).toBe(FLEET_RESCUE_HOLD_BEATS_MIN);
    expect(beatsUntilOwned(fleet, 0)).toBe(K + 1);
    expect(fleet.owners[0]).toBe(rescuer);
    expect(beatsUntilHandedOver(fleet, 0)).toBe(2 * FLEET_RESCUE_HOLD_BEATS_MIN);

    // gamma recovers and takes its shard on the first beat it is handed back.
    fleet.stuck.delete("gamma");
    expect(beatsUntilOwned(fleet, 0)).toBe(1);
    expect(fleet.owners).toEqual(THREE_OWN);
    fleet.beat(THREE); // the planners see gamma own it: the rescue is forgotten

    // gamma gets stuck and loses its lease: the next rescue holds the minimum again.
    fleet.stuck.add("gamma");
    fleet.owners[0] = null;
    expect(beatsUntilOwned(fleet, 0)).toBe(K + 1);
    expect(fleet.owners[0]).toBe(rescuer);
    expect(beatsUntilHandedOver(fleet, 0)).toBe(FLEET_RESCUE_HOLD_BEATS_MIN);
  });

  it("gives a new target its own K beats: a node joining as a stuck shard's target takes it alone", () => {
    const start = THREE_OWN.map((owner, shard) => (shard === 0 ? null : owner));
    const fleet = new SimulatedFleet(start, THREE);
    fleet.stuck.add("gamma");
    fleet.beats(K, THREE);
    fleet.start("delta"); // shard 0's target among the four
    expect(planned(fleet.beat(FOUR))).toEqual({ delta: { acquire: [0], handOver: [] } });
    expect(fleet.owners[0]).toBe("delta");
  });

  it("goes down the ranking, K beats per stuck node, to the first node that takes it", () => {
    const start = THREE_OWN.map((owner, shard) => (shard === 0 ? null : owner));
    const fleet = new SimulatedFleet(start, THREE);
    const ranking = rendezvousRanking(0, THREE);
    fleet.stuck.add(ranking[0]!);
    fleet.stuck.add(ranking[1]!);
    expect(beatsUntilOwned(fleet, 0)).toBe(2 * K + 1);
    expect(fleet.owners[0]).toBe(ranking[2]);
  });
});

describe("OwnershipPlanner: random sequences of beats", () => {
  const NAMES = ["n1", "n2", "n3", "n4", "n5"];
  const scenario = fc.record({
    nodes: fc.integer({ min: 2, max: 5 }).map((count) => NAMES.slice(0, count)),
    numShards: fc.integer({ min: 1, max: 12 }),
    seedBeats: fc.array(fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), { maxLength: 25 }),
    stable: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
    starts: fc.array(fc.integer({ min: -1, max: 5 }), { minLength: 12, maxLength: 12 }),
  });
  /** The nodes picked by `mask`; index 5 of `starts` stands for a dead node. */
  const pick = (nodes: readonly string[], mask: readonly boolean[]) => nodes.filter((_, index) => mask[index]);
  const startOwners = (nodes: readonly string[], starts: readonly number[], numShards: number) =>
    starts.slice(0, numShards).map((index) => (index < 0 ? null : index === 5 ? "dead" : (nodes[index] ?? null)));

  it("never names two acquirers for one shard on a beat, and converges once the live set is stable", () => {
    fc.assert(
      fc.property(scenario, ({ nodes, numShards, seedBeats, stable, starts }) => {
        const live = pick(nodes, stable);
        fc.pre(live.length > 0);
        const fleet = new SimulatedFleet(startOwners(nodes, starts, numShards), nodes);
        for (const mask of seedBeats) fleet.beat(pick(nodes, mask)); // SimulatedFleet.beat checks every beat
        // Absent owners' leases lapse within LEASE_BEATS beats and are acquired on the next;
        // live owners hand over on the 2nd stable beat and the targets acquire on the 3rd.
        fleet.beats(LEASE_BEATS + 1, live);
        expect(fleet.owners).toEqual(assignment(numShards, live));
        expectNothingPlanned(fleet.beat(live));
      }),
      { seed: 24, numRuns: 300 },
    );
  });

  it("with stuck nodes, leaves no shard unowned longer than K beats per stuck node", () => {
    fc.assert(
      fc.property(scenario, fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), ({ nodes, numShards, stable, starts }, stuckMask) => {
        const live = pick(nodes, stable);
        const stuck = pick(nodes, stuckMask);
        fc.pre(live.some((nodeId) => !stuck.includes(nodeId)));
        const fleet = new SimulatedFleet(startOwners(nodes, starts, numShards), nodes);
        for (const nodeId of stuck) fleet.stuck.add(nodeId);
        const stuckLive = live.filter((nodeId) => stuck.includes(nodeId)).length;
        for (let beat = 0; beat < 80; beat++) {
          fleet.beat(live);
          for (const streak of fleet.unownedStreaks) expect(streak).toBeLessThanOrEqual(stuckLive * K + 1);
        }
      }),
      { seed: 24, numRuns: 150 },
    );
  });
});

describe("OwnershipPlanner: bad input", () => {
  it("refuses a malformed observation with INVALID_ARGUMENT and keeps its state", () => {
    const planner = new OwnershipPlanner();
    const owners = ["alpha", "beta", "gamma"];
    expect(planner.plan({ self: "alpha", liveNodeIds: ["beta", "gamma"], owners })).toEqual(NOTHING);
    const bad = [
      { self: "al/pha", liveNodeIds: ["beta", "gamma"], owners },
      { self: "alpha", liveNodeIds: ["beta", ""], owners },
      { self: "alpha", liveNodeIds: ["beta", "gamma"], owners: ["alpha", "b eta", "gamma"] },
      { self: "alpha", liveNodeIds: ["beta", "gamma"], owners: [] },
      { self: "alpha", liveNodeIds: ["beta", "gamma"], owners: new Array<null>(257).fill(null) },
      { self: "alpha", liveNodeIds: ["beta", "gamma"], owners: ["alpha", "beta"] },
    ];
    for (const observation of bad) expect(codeOf(() => planner.plan(observation))).toBe("INVALID_ARGUMENT");
    // Still the second beat of one live set for the planner: alpha hands its shard over.
    expect(planner.plan({ self: "alpha", liveNodeIds: ["beta", "gamma"], owners })).toEqual({ acquire: [], handOver: [0] });
  });
});
