import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import type { HarnessNode, ShardHarness } from "./shardHarness.js";

/**
 * A functions runtime on a harness writer: the app's catalog resolved in the harness's
 * bucket, the runtime on the node's engine. The runtime keeps the system clock (its
 * backoff sleeps must pass while the harness's manual clock stands still).
 */
export async function runtimeOn(h: ShardHarness, node: HarnessNode, module: unknown): Promise<FunctionRuntime> {
  const app = App.fromModule(module, "test app");
  const catalog = await resolveCatalog(h.bucket, app.schema, new SeededRandom(7));
  return new FunctionRuntime({ app, catalog, shard: node.engine });
}
