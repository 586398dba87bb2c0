/**
 * Scenario: every node of a fleet computes each shard's owner from the live set alone, so
 * the rendezvous weight is pinned by golden values (checked independently with Python's
 * hashlib: sha256(b"cairn-rendezvous-v1\0" + struct.pack(">I", shard) + node_id)[:8],
 * big-endian) and a golden assignment; adding a node moves only shards to it, about
 * 1/(N+1) of them; removing one moves only its own; the order of the live list and
 * duplicates in it change nothing; bad shards and node ids are refused.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SHARDS_MAX } from "../../src/base/index.js";
import { assignment, ownerOf, rendezvousRanking, rendezvousWeight } from "../../src/fleet/index.js";
import { codeOf } from "../support/errorCode.js";

/** Distinct node ids of the NODE_ID_PATTERN alphabet, as a fleet would name its nodes. */
const nodeIdArbitrary = fc.stringMatching(/^[A-Za-z0-9._-]{1,16}$/);
const fleetArbitrary = (minLength: number, maxLength: number) => fc.uniqueArray(nodeIdArbitrary, { minLength, maxLength });

function ownersOver(numShards: number, live: readonly string[]): (string | null)[] {
  const owners: (string | null)[] = [];
  for (let shard = 0; shard < numShards; shard++) owners.push(ownerOf(shard, live));
  return owners;
}

describe("rendezvous weight", () => {
  it("is pinned by golden values", () => {
    expect(rendezvousWeight(0, "a")).toBe(4600988041632588873n);
    expect(rendezvousWeight(1, "a")).toBe(4045614132509987633n);
    expect(rendezvousWeight(0, "node-1")).toBe(2357378288178878406n);
    expect(rendezvousWeight(5, "node-2")).toBe(14341851884842105491n);
    expect(rendezvousWeight(255, "node-3")).toBe(12358446744086800407n);
    expect(rendezvousWeight(17, "Z.z_9-")).toBe(12662151157578071477n);
  });

  it("pins the assignment of 6 shards over 3 nodes, and over a 4th joining", () => {
    expect(assignment(6, ["alpha", "beta", "gamma"])).toEqual(["gamma", "beta", "gamma", "alpha", "gamma", "beta"]);
    expect(assignment(6, ["alpha", "beta", "gamma", "delta"])).toEqual(["delta", "delta", "gamma", "alpha", "gamma", "beta"]);
  });

  it("ranks the owner first, then by falling weight", () => {
    fc.assert(
      fc.property(fleetArbitrary(1, 8), fc.integer({ min: 0, max: SHARDS_MAX - 1 }), (live, shard) => {
        const ranking = rendezvousRanking(shard, live);
        expect(ranking[0]).toBe(ownerOf(shard, live));
        expect([...ranking].sort()).toEqual([...live].sort());
        const weights = ranking.map((nodeId) => rendezvousWeight(shard, nodeId));
        for (let i = 1; i < weights.length; i++) expect(weights[i - 1]! > weights[i]!).toBe(true);
      }),
      { seed: 24, numRuns: 200 },
    );
  });

  it("has no owner without live nodes", () => {
    expect(ownerOf(3, [])).toBeNull();
    expect(assignment(2, [])).toEqual([null, null]);
  });
});

describe("rendezvous ownership", () => {
  it("does not depend on the order of the live list or on duplicates in it", () => {
    fc.assert(
      fc.property(fleetArbitrary(1, 8).chain((live) => fc.tuple(fc.constant(live), fc.shuffledSubarray(live, { minLength: live.length }))), ([live, shuffled]) => {
        const withDuplicates = [...shuffled, ...live.slice(0, 2)];
        expect(assignment(64, shuffled)).toEqual(assignment(64, live));
        expect(assignment(64, withDuplicates)).toEqual(assignment(64, live));
      }),
      { seed: 24, numRuns: 100 },
    );
  });

  it("moves only shards to a node that joins, about numShards / (N + 1) of them", () => {
    let movedTotal = 0;
    let expectedTotal = 0;
    fc.assert(
      fc.property(fleetArbitrary(2, 9), ([joining, ...live]) => {
        const before = assignment(SHARDS_MAX, live);
        const after = assignment(SHARDS_MAX, [...live, joining!]);
        let moved = 0;
        before.forEach((owner, shard) => {
          if (after[shard] === owner) return;
          expect(after[shard]).toBe(joining);
          moved++;
        });
        // Binomial(256, 1/(N+1)), mean 28–128, standard deviation 5–8 shards: these bounds
        // are 4 deviations or more either side.
        const expected = SHARDS_MAX / (live.length + 1);
        expect(moved).toBeGreaterThan(expected * 0.3);
        expect(moved).toBeLessThan(expected * 2);
        movedTotal += moved;
        expectedTotal += expected;
      }),
      { seed: 24, numRuns: 40 },
    );
    // Over the 40 fleets the deviation of the sum is ~40 shards on ~2,000: 10% is 5 of them.
    expect(movedTotal).toBeGreaterThan(expectedTotal * 0.9);
    expect(movedTotal).toBeLessThan(expectedTotal * 1.1);
  });

  it("moves only the shards of a node that leaves", () => {
    fc.assert(
      fc.property(fleetArbitrary(2, 9), ([leaving, ...rest]) => {
        const before = assignment(SHARDS_MAX, [...rest, leaving!]);
        const after = assignment(SHARDS_MAX, rest);
        before.forEach((owner, shard) => {
          if (owner !== leaving) expect(after[shard]).toBe(owner);
          else expect(after[shard]).not.toBe(leaving);
        });
      }),
      { seed: 24, numRuns: 40 },
    );
  });

  it("spreads shards evenly over the live nodes", () => {
    // 256 shards over 4 nodes: 64 each, with a standard deviation of ~7.
    const live = ["node-1", "node-2", "node-3", "node-4"];
    const counts = new Map<string, number>();
    for (const owner of assignment(SHARDS_MAX, live)) counts.set(owner!, (counts.get(owner!) ?? 0) + 1);
    for (const nodeId of live) {
      expect(counts.get(nodeId)).toBeGreaterThan((SHARDS_MAX / live.length) * 0.6);
      expect(counts.get(nodeId)).toBeLessThan((SHARDS_MAX / live.length) * 1.4);
    }
  });

  it("agrees between ownerOf and assignment", () => {
    const live = ["alpha", "beta", "gamma", "delta"];
    expect(ownersOver(SHARDS_MAX, live)).toEqual(assignment(SHARDS_MAX, live));
  });

  it("refuses a bad shard or node id with INVALID_ARGUMENT", () => {
    expect(codeOf(() => rendezvousWeight(-1, "a"))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => rendezvousWeight(1.5, "a"))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => rendezvousWeight(SHARDS_MAX, "a"))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => rendezvousWeight(0, ""))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => ownerOf(0, ["ok", "not/ok"]))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => rendezvousRanking(0, ["ok", "x".repeat(129)]))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => assignment(0, ["a"]))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => assignment(SHARDS_MAX + 1, ["a"]))).toBe("INVALID_ARGUMENT");
  });
});
