import { resolve } from "node:path";
import { randomHex, systemClock, systemRandom } from "../base/index.js";
import { ConsumerWatermarks, CONSUMER_TTL_MS_DEFAULT, planGarbage, RETAINED_SNAPSHOT_SPACING_MS_DEFAULT, type GarbagePlan, type GarbageReport } from "../gc/index.js";
import { openGlobals, generationStore, holdsOf, readBranchRegistry, ShardManifest } from "../manifest/index.js";
import { assertConditionalWrites, openObjectStore, type ObjectStore } from "../objectstore/index.js";
import { ShardedStore } from "../shard/index.js";
import { lockLocalDirectory } from "./localDirectoryLock.js";
import { progressReporter } from "./progressReporter.js";

export interface GcOptions {
  readonly store: string;
  readonly local: string;
  readonly dryRun?: boolean;
}

/**
 * `cairn gc`: one garbage-collection pass per shard, sweep included. GC is the lease
 * owner's job, so a real pass takes each shard's lease (refused while a server holds it:
 * that server collects on its own cadence), catches up, collects and hands the lease back.
 * `--dry-run` only reads and prints what a pass would delete now.
 */
export async function gcCommand(options: GcOptions): Promise<void> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const store = await openObjectStore(options.store);
  try {
    if (options.dryRun) {
      const globals = await openGlobals(store, { clock: systemClock, random: systemRandom, mustExist: true });
      const { deploymentId, numShards, generation } = globals.value;
      const shardStore = generationStore(store, generation);
      for (let shard = 0; shard < numShards; shard++) {
        const manifest = await new ShardManifest(shardStore, shard, deploymentId, systemRandom).refresh();
        const plan = await planGarbage(manifest, {
          store: shardStore,
          watermarks: new ConsumerWatermarks(shardStore, shard, systemRandom),
          nowMs: systemClock.nowMs(),
          consumerTtlMs: CONSUMER_TTL_MS_DEFAULT,
          sweep: true,
          retentionMs: globals.value.retentionMs,
          retainedSnapshotSpacingMs: RETAINED_SNAPSHOT_SPACING_MS_DEFAULT,
          holds: async () => holdsOf((await readBranchRegistry(store, systemRandom)).registrations.map((read) => read.value), generation, shard, systemClock.nowMs()),
        });
        say(describePlan(shard, plan));
      }
      return;
    }
    await assertConditionalWrites(store);
    const localLock = await lockLocalDirectory(options.local);
    try {
      await collectEveryShard(store, options.local, say);
    } finally {
      await localLock.release();
    }
  } finally {
    await store.close();
  }
}

async function collectEveryShard(store: ObjectStore, localDirectory: string, say: (line: string) => void): Promise<void> {
  const sharded = await ShardedStore.open({
    store,
    localDirectory: resolve(localDirectory),
    nodeId: `gc-${randomHex(systemRandom, 6)}`,
    onEvent: progressReporter((line) => process.stderr.write(`${line}\n`)),
  });
  try {
    await sharded.acquireAll();
    for (const engine of sharded.engines) say(describeReport(engine.shard, await engine.collectGarbageNow({ sweep: true })));
  } finally {
    await sharded.close();
  }
}

function describePlan(shard: number, plan: GarbagePlan): string {
  const moves = plan.logStartAfter > plan.logStartBefore ? `would move logStart ${plan.logStartBefore} → ${plan.logStartAfter}` : `logStart stays ${plan.logStartBefore}`;
  return (
    `shard ${shard}: ${moves}, would delete ${plan.segmentKeys.length} segment(s), ${plan.snapshotKeys.length} snapshot object(s), ` +
    `${plan.strayKeys.length} stray(s)${notes(plan)}`
  );
}

function describeReport(shard: number, report: GarbageReport): string {
  return (
    `shard ${shard}: logStart ${report.logStartBefore} → ${report.logStartAfter}, deleted ${report.segmentsDeleted} segment(s), ` +
    `${report.snapshotObjectsDeleted} snapshot object(s), ${report.straysDeleted} stray(s)${notes(report)}`
  );
}

function notes(result: { readonly heldBackBy: number | null; readonly malformedWatermarks: readonly { consumerId: string; reason: string }[] }): string {
  const held = result.heldBackBy === null ? "" : `; held back by a consumer that still needs seqno ${result.heldBackBy}`;
  const malformed = result.malformedWatermarks.map((bad) => `; ignored the malformed watermark of ${bad.consumerId} (${bad.reason})`);
  return held + malformed.join("");
}
