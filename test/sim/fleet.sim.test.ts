/**
 * Scenario: the seeded simulation of a fleet (see FleetSimulation.ts) over many seeds.
 * Two writer nodes move three shards between them — graceful hand-overs, crashes whose
 * shards the other takes once the lease lapsed, pauses past the lease whose zombie must
 * be fenced — steered by a script (odd seeds) or by the fleet's own balancer and role
 * machine (even seeds), while moving money within each shard; two followers tail every
 * shard with the real tailer and read at their common frontier. Checked: every
 * acknowledged write is in its shard's log exactly once and in order, one writer per
 * epoch, epochs increase, no zombie acknowledged past its fence, followers never show an
 * uncommitted version, a torn transfer or a frontier going back, and they converge to
 * the log.
 *
 * Replay one seed: CAIRN_SIM_SEED=123 npx vitest run test/sim/fleet.sim.test.ts
 * More seeds:      CAIRN_FLEET_SIM_SEEDS=500 npx vitest run test/sim/fleet.sim.test.ts
 */
import { describe, expect, it } from "vitest";
import { runFleetSimulation, type FleetSimulationReport } from "./FleetSimulation.js";

const replaySeed = process.env.CAIRN_SIM_SEED;
const seedCount = Number(process.env.CAIRN_FLEET_SIM_SEEDS ?? 30);
const seeds = replaySeed !== undefined ? [Number(replaySeed)] : Array.from({ length: seedCount }, (_, index) => index + 1);
const VIOLATIONS_SHOWN = 20;
const replay = (seed: number) => `replay with: CAIRN_SIM_SEED=${seed} npx vitest run test/sim/fleet.sim.test.ts`;

/** The first violations (one fault tends to break many reads after it) and how to replay the seed. */
function describeFailure(report: FleetSimulationReport): string {
  const shown = report.violations.slice(0, VIOLATIONS_SHOWN);
  const more = report.violations.length - shown.length;
  return `seed ${report.seed} violated the fleet invariants:\n  ${shown.join("\n  ")}${more > 0 ? `\n  … and ${more} more` : ""}\n${replay(report.seed)}`;
}

describe("fleet simulation", () => {
  it(`holds every invariant over ${seeds.length} seed(s)`, async () => {
    const totals = { acknowledged: 0, unknown: 0, handOvers: 0, crashes: 0, pauses: 0, takeovers: 0, followerReads: 0, followerRestores: 0, skippedSegments: 0 };
    for (const seed of seeds) {
      let report: FleetSimulationReport;
      try {
        report = await runFleetSimulation({ seed });
      } catch (error) {
        throw new Error(`seed ${seed} crashed: ${String(error)}\n${replay(seed)}`, { cause: error });
      }
      if (report.violations.length > 0) expect.fail(describeFailure(report));
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += report[key];
    }
    // The runs must actually exercise ownership moves and the followers, not idle through them.
    expect(totals.acknowledged).toBeGreaterThan(seeds.length * 20);
    expect(totals.followerReads).toBeGreaterThan(seeds.length * 10);
    if (seeds.length >= 20) {
      expect(totals.handOvers).toBeGreaterThan(seeds.length);
      expect(totals.takeovers).toBeGreaterThan(seeds.length);
      expect(totals.crashes).toBeGreaterThan(0);
      expect(totals.pauses).toBeGreaterThan(0);
    }
    console.log(`fleet simulation totals over ${seeds.length} seeds: ${JSON.stringify(totals)}`);
  }, Math.max(300_000, seeds.length * 5_000));

  // Replaying a seed is only worth something if the run is a pure function of it.
  it("runs a seed the same way twice, steered by the script and by the planner", async () => {
    for (const ownership of ["script", "planner"] as const) {
      const seed = seeds[0]!;
      expect(await runFleetSimulation({ seed, ownership })).toEqual(await runFleetSimulation({ seed, ownership }));
    }
  });
});
