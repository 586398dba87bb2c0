/**
 * Scenario: the seeded simulation of one shard (see ShardSimulation.ts) over many seeds.
 * Writers contend, fail over, stall past their leases and lose responses while moving
 * money; a fresh node then checks that acknowledged writes survived exactly once, fenced
 * epochs left nothing visible, the log chains with increasing timestamps and the bank
 * total is conserved.
 *
 * Replay one seed: CAIRN_SIM_SEED=123 npx vitest run test/sim
 * More seeds:      CAIRN_SIM_SEEDS=2000 npx vitest run test/sim
 */
import { describe, expect, it } from "vitest";
import { runShardSimulation, type SimulationReport } from "./ShardSimulation.js";

const replaySeed = process.env.CAIRN_SIM_SEED;
const seedCount = Number(process.env.CAIRN_SIM_SEEDS ?? 250);
const seeds = replaySeed !== undefined ? [Number(replaySeed)] : Array.from({ length: seedCount }, (_, index) => index + 1);

function describeFailure(report: SimulationReport): string {
  return (
    `seed ${report.seed} violated the shard invariants:\n  ${report.violations.join("\n  ")}\n` +
    `replay with: CAIRN_SIM_SEED=${report.seed} npx vitest run test/sim`
  );
}

describe("shard simulation", () => {
  it(`holds every invariant over ${seeds.length} seed(s)`, async () => {
    const totals = { acknowledged: 0, unknown: 0, epochs: 0, snapshots: 0, collected: 0, skipped: 0, pipelined: 0 };
    for (const seed of seeds) {
      let report: SimulationReport;
      try {
        report = await runShardSimulation({ seed });
      } catch (error) {
        throw new Error(`seed ${seed} crashed: ${String(error)}\nreplay with: CAIRN_SIM_SEED=${seed} npx vitest run test/sim`, {
          cause: error,
        });
      }
      if (report.violations.length > 0) expect.fail(describeFailure(report));
      totals.acknowledged += report.acknowledged;
      totals.unknown += report.unknown;
      totals.epochs += report.highestEpoch;
      totals.snapshots += report.snapshots;
      totals.collected += report.segmentsCollected;
      totals.skipped += report.skippedSegments;
      totals.pipelined += report.pipelined;
    }
    // The runs must actually exercise the protocol, not idle through it.
    expect(totals.acknowledged).toBeGreaterThan(seeds.length * 20);
    if (seeds.length >= 50) {
      expect(totals.epochs).toBeGreaterThan(seeds.length * 2);
      expect(totals.snapshots).toBeGreaterThan(seeds.length);
      expect(totals.collected).toBeGreaterThan(0);
      // Writers had several segments in flight at once, not only one flush at a time.
      expect(totals.pipelined).toBeGreaterThan(seeds.length);
    }
    console.log(`simulation totals over ${seeds.length} seeds: ${JSON.stringify(totals)}`);
  }, 300_000);
});
