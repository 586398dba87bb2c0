import { SeededRandom } from "../../src/base/random.js";
import type { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import { openBenchWriter } from "./BenchWriter.js";
import { summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { timeSequentially } from "./roundTrips.js";
import { smallDocumentsUnit } from "./smallDocuments.js";

/**
 * Phase 2: one client commits one-document inserts one after another, so every commit is
 * a flush of its own: its latency is the protocol's floor (create, then verify unless the
 * lease covers it, then the local apply). Engine tuning is the default except `verify`.
 */
export interface SequentialFigures {
  readonly verify: ShardEngineTuning["verify"];
  readonly commit: LatencySummary;
}

export async function measureSequentialCommits(
  store: S3ObjectStore,
  directory: string,
  verify: ShardEngineTuning["verify"],
  commits: number,
): Promise<SequentialFigures> {
  const writer = await openBenchWriter(store, directory, `sequential-${verify}`, { verify });
  try {
    const documents = { random: new SeededRandom(11), label: "sequential", withIndex: false };
    let n = 0;
    const commit = () => writer.engine.commit(smallDocumentsUnit(documents, writer.engine.readTs, 1, n++));
    return { verify, commit: summarizeLatencies(await timeSequentially(commit, commits)) };
  } finally {
    await writer.close();
  }
}
