import { type Random, SeededRandom } from "../../src/base/random.js";
import type { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime, type ShardSet } from "../../src/functions/FunctionRuntime.js";
import type { ObjectStore } from "../../src/objectstore/index.js";
import type { ShardedStore } from "../../src/shard/ShardedStore.js";

/** A sharded store's engines as the functions runtime reads them: every shard, at the store's common frontier. */
export function shardSetOf(sharded: ShardedStore): ShardSet {
  return {
    shards: sharded.engines,
    get readTs() {
      return sharded.readTs;
    },
  };
}

/** The functions runtime of `app` over every shard of `sharded`, its schema bound to the deployment's catalog in `store`. */
export async function shardedRuntime(sharded: ShardedStore, store: ObjectStore, app: App, random: Random = new SeededRandom(2)): Promise<FunctionRuntime> {
  const catalog = await resolveCatalog(store, app.schema, random);
  return new FunctionRuntime({ app, catalog, shards: shardSetOf(sharded) });
}
