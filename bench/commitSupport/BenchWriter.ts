import { join } from "node:path";
import { systemClock } from "../../src/base/clock.js";
import { systemRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import type { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine, type EngineEvent } from "../../src/shard/ShardEngine.js";

/**
 * A one-shard deployment under its own prefix of the bucket, with a writer that holds the
 * lease: globals, a local SQLite file in the benchmark's temp directory, an acquired
 * engine. Real time (system clock) and system randomness, as in production. Opening the
 * same `name` in the same directory again re-opens the local file a previous writer left.
 */
export interface BenchWriter {
  readonly deploymentId: string;
  readonly localPath: string;
  readonly local: LocalStore;
  readonly engine: ShardEngine;
  /** Relinquishes the lease, closes the local file and the store. */
  close(): Promise<void>;
}

export async function openBenchWriter(
  store: S3ObjectStore,
  directory: string,
  name: string,
  tuning: Partial<ShardEngineTuning> = {},
  onEvent?: (event: EngineEvent) => void,
): Promise<BenchWriter> {
  const globals = await openGlobals(store, { clock: systemClock, random: systemRandom, numShards: 1 });
  const deploymentId = globals.value.deploymentId;
  const localPath = join(directory, `${name}.sqlite`);
  const local = LocalStore.open({ path: localPath, shard: 0, deploymentId });
  try {
    const engine = await ShardEngine.open({
      store,
      deploymentId,
      shard: 0,
      local,
      nodeId: `bench-${name}-${process.pid}`,
      clock: systemClock,
      random: systemRandom,
      hybridClock: new HybridClock(systemClock),
      tuning,
      ...(onEvent === undefined ? {} : { onEvent }),
    });
    await engine.acquire();
    return {
      deploymentId,
      localPath,
      local,
      engine,
      close: async () => {
        try {
          await engine.close();
        } finally {
          local.close();
          await store.close();
        }
      },
    };
  } catch (error) {
    local.close();
    await store.close();
    throw error;
  }
}
