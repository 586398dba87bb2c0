import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { systemRandom } from "../base/random.js";
import { backfillIndexes, FunctionRuntime, loadApp, resolveCatalog } from "../functions/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { ShardedStore } from "../shard/ShardedStore.js";
import { progressReporter } from "./progressReporter.js";

export interface ServeOptions {
  readonly store: string;
  readonly local: string;
  readonly shards?: number;
  readonly nodeId?: string;
  /** The app module (schema and functions); default: the demo app in the repository. */
  readonly app?: string;
}

/** The demo app that ships with Cairn, served when no --app is given. */
export const DEMO_APP_PATH = fileURLToPath(new URL("../../demo/app.ts", import.meta.url));

/** Opens the deployment, becomes the writer of every shard and runs until SIGINT/SIGTERM. */
export async function serveCommand(options: ServeOptions): Promise<void> {
  const say = (line: string) => process.stdout.write(`cairn: ${line}\n`);
  // The app first: a broken app stops startup before anything touches the bucket.
  const app = await loadApp(options.app ?? DEMO_APP_PATH);
  say(`app ${app.source}: ${app.paths.length} function(s): ${app.paths.join(", ")}`);
  const store = await openObjectStore(options.store);
  const probe = await assertConditionalWrites(store);
  const form = probe.ifMatchEtagForm === undefined ? "" : `; If-Match etags sent ${probe.ifMatchEtagForm}`;
  say(`store ${store.description} (conditional writes verified${form})`);
  // Before any lease: a schema change the deployment refuses must not leave a lease to wait out.
  const catalog = await resolveCatalog(store, app.schema, systemRandom);
  const nodeId = options.nodeId ?? `node-${randomBytes(6).toString("hex")}`;
  const sharded = await ShardedStore.open({
    store,
    localDirectory: resolve(options.local),
    nodeId,
    ...(options.shards !== undefined ? { numShards: options.shards } : {}),
    onEvent: progressReporter(say),
  });
  try {
    say(`deployment ${sharded.deploymentId}: ${sharded.numShards} shard(s), local files in ${resolve(options.local)}`);
    await sharded.acquireAll();
    for (const engine of sharded.engines) {
      const meta = engine.local.meta();
      say(`shard ${engine.shard}: local copy through seqno ${meta.appliedSeqno}, frontier ts ${meta.frontierTs}`);
    }
    // Tables live on shard 0 until the sharding issue routes them by shard key.
    const writer = sharded.engines[0]!;
    const backfilled = await backfillIndexes({
      catalog,
      shard: writer,
      store,
      random: systemRandom,
      onProgress: (progress) => say(`backfilling index ${progress.table}.${progress.index}: ${progress.documents} document(s)`),
    });
    for (const index of backfilled) say(`index ${index.table}.${index.index} is ready (${index.documents} document(s) indexed)`);
    const runtime = new FunctionRuntime({ app, catalog, shard: writer });
    say(`functions run on shard ${writer.shard}; tables: ${[...runtime.catalog.tables].map((table) => `${table.name} (#${table.number})`).join(", ")}`);
    // Listen before announcing readiness: whoever waits for the announcement may signal at once.
    const stopRequested = stopSignal();
    say(`node ${nodeId} is the writer; no network server yet (later issues add it). Ctrl-C stops.`);
    await stopRequested;
    say("stopping: draining commits and releasing leases");
  } finally {
    await sharded.close();
    await store.close();
  }
  say("stopped");
}

/** Resolves on the first SIGINT or SIGTERM; the handlers are installed when this is called. */
function stopSignal(): Promise<void> {
  return new Promise<void>((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
