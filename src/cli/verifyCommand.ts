import { systemClock, CairnError, systemRandom } from "../base/index.js";
import { openGlobals, generationStore } from "../manifest/index.js";
import { openObjectStore } from "../objectstore/index.js";
import { verifyShard, type ShardVerification } from "../shard/index.js";
import { throttled } from "./progressReporter.js";

export interface VerifyOptions {
  readonly store: string;
  readonly shard?: number;
}

/**
 * `cairn verify`: checks every shard's manifest, log and snapshot (see verifyShard) and
 * prints a report, with progress on stderr. Read-only. Exits 1 when anything is wrong.
 */
export async function verifyCommand(options: VerifyOptions): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const globals = await openGlobals(store, { clock: systemClock, random: systemRandom, mustExist: true });
    const { deploymentId, numShards, generation } = globals.value;
    const shardStore = generationStore(store, generation);
    if (options.shard !== undefined && options.shard >= numShards) {
      throw new CairnError("INVALID_ARGUMENT", `no shard ${options.shard}: the deployment has ${numShards} (0..${numShards - 1})`);
    }
    const shards = options.shard === undefined ? [...Array(numShards).keys()] : [options.shard];
    process.stdout.write(`deployment ${deploymentId}: ${numShards} shard(s) (layout generation ${generation}), verifying ${shards.length}\n`);
    const progress = throttled((line: string) => process.stderr.write(`${line}\n`));
    let problems = 0;
    for (const shard of shards) {
      const report = await verifyShard({
        store: shardStore,
        deploymentId,
        shard,
        onProgress: (step) => progress(`shard ${step.shard}: ${step.phase === "log" ? "segment" : "snapshot part"} ${step.done}/${step.total}`),
      });
      process.stdout.write(`${describe(report)}\n`);
      for (const problem of report.problems) process.stdout.write(`shard ${shard}: PROBLEM: ${problem}\n`);
      problems += report.problems.length;
    }
    process.stdout.write(problems === 0 ? "verify: no problems found\n" : `verify: ${problems} problem(s) found\n`);
    if (problems > 0) process.exitCode = 1;
  } finally {
    await store.close();
  }
}

function describe(report: ShardVerification): string {
  if (report.epoch === null) return `shard ${report.shard}: manifest unusable`;
  const log = report.tail === report.logStart ? "no segments" : `segments ${report.logStart}..${(report.tail ?? 0) - 1}`;
  const skipped = report.segmentsSkipped > 0 ? `, ${report.segmentsSkipped} fenced leftover(s) skipped` : "";
  const strays = report.straysBelowLogStart > 0 ? `, ${report.straysBelowLogStart} stray(s) below logStart (GC sweeps them)` : "";
  const snapshot = report.snapshot === null ? "no snapshot" : `snapshot at ${report.snapshot.seqno} (${report.snapshot.parts} part(s), ${report.snapshot.documents} documents)`;
  return `shard ${report.shard}: epoch ${report.epoch}, logStart ${report.logStart}, ${log} checked (${report.segmentsChecked})${skipped}${strays}, ${snapshot}`;
}
