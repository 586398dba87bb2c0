import { resolve } from "node:path";
import { systemClock, type Clock } from "../base/clock.js";
import { CairnError, hasErrorCode } from "../base/errors.js";
import { systemRandom } from "../base/random.js";
import { backfillIndexes, FunctionRuntime, resolveCatalog, type App } from "../functions/index.js";
import { ObservedObjectStore, type ObjectStore } from "../objectstore/index.js";
import type { EngineEvent } from "../shard/ShardEngine.js";
import { ShardedStore } from "../shard/ShardedStore.js";
import { runtimeBackend, SyncHandler, type SyncBackend, type TokenVerifier } from "../sync/index.js";
import { CairnServer } from "./CairnServer.js";
import { HttpApi } from "./HttpApi.js";
import { ServerMetrics } from "./ServerMetrics.js";
import { buildWebAssets, type WebApp } from "./WebAssets.js";
import { statusPage } from "./statusPage.js";

export interface WriterNodeOptions {
  /** The bucket, opened and probed for conditional writes. */
  readonly store: ObjectStore;
  readonly localDirectory: string;
  readonly app: App;
  readonly nodeId: string;
  readonly numShards?: number;
  readonly port: number;
  readonly host: string;
  readonly adminKey: string | null;
  readonly verifier: TokenVerifier | null;
  /** The browser app at `/` (null: a status page). */
  readonly webApp: WebApp | null;
  readonly log: (line: string) => void;
  readonly onEngineEvent?: (event: EngineEvent) => void;
  readonly clock?: Clock;
  /** WebSocket ping interval (default PING_INTERVAL_MS). */
  readonly pingIntervalMs?: number;
}

export interface RunningNode {
  readonly url: string;
  readonly port: number;
  readonly deploymentId: string;
  readonly handler: SyncHandler;
  /** Stops accepting, drains, ends sessions, relinquishes the leases and closes the files. */
  stop(): Promise<void>;
}

/**
 * Assembles a writer node (DESIGN.md §9): the deployment's shards acquired, indexes
 * backfilled, the functions runtime, the sync handler fed by the engine's applied
 * segments, metrics, and the HTTP/WebSocket server. Every step that can refuse (the
 * schema, the port) runs before the node says it is ready; whatever was opened is
 * closed again when a later step fails.
 */
export async function startWriterNode(options: WriterNodeOptions): Promise<RunningNode> {
  const { app, log } = options;
  const clock = options.clock ?? systemClock;
  let handler: SyncHandler | null = null;
  const metrics = new ServerMetrics(() => handler!.stats());
  const store = new ObservedObjectStore(options.store, (call) => metrics.storeCall(call), () => clock.monotonicMs());
  // Before any lease: a schema change the deployment refuses must not leave a lease to wait out.
  const catalog = await resolveCatalog(store, app.schema, systemRandom);
  const sharded = await ShardedStore.open({
    store,
    localDirectory: resolve(options.localDirectory),
    nodeId: options.nodeId,
    ...(options.numShards !== undefined ? { numShards: options.numShards } : {}),
    onEvent: (event) => {
      metrics.engineEvent(event);
      options.onEngineEvent?.(event);
    },
  });
  try {
    log(`deployment ${sharded.deploymentId}: ${sharded.numShards} shard(s), local files in ${resolve(options.localDirectory)}`);
    await acquireWaitingOutDeadLeases(sharded, clock, log);
    for (const engine of sharded.engines) {
      const meta = engine.local.meta();
      log(`shard ${engine.shard}: local copy through seqno ${meta.appliedSeqno}, frontier ts ${meta.frontierTs}`);
    }
    // Tables live on shard 0 until the sharding issue routes them by shard key.
    const writer = sharded.engines[0]!;
    const backfilled = await backfillIndexes({
      catalog,
      shard: writer,
      store,
      random: systemRandom,
      onProgress: (progress) => log(`backfilling index ${progress.table}.${progress.index}: ${progress.documents} document(s)`),
    });
    for (const index of backfilled) log(`index ${index.table}.${index.index} is ready (${index.documents} document(s) indexed)`);
    const runtime = new FunctionRuntime({ app, catalog, shard: writer });
    log(`functions run on shard ${writer.shard}; tables: ${[...runtime.catalog.tables].map((table) => `${table.name} (#${table.number})`).join(", ")}`);
    const backend = meteredBackend(runtimeBackend(sharded.deploymentId, runtime, writer), metrics, clock);
    const sync = new SyncHandler({ backend, verifier: options.verifier, log, clock });
    handler = sync;
    writer.onSegmentApplied((segment) => sync.segmentApplied(segment));
    const health = () => ({
      status: sharded.engines.every((engine) => engine.state.kind === "writing") ? "ok" : "degraded",
      role: "writer",
      nodeId: options.nodeId,
      deploymentId: sharded.deploymentId,
      shards: sharded.engines.map((engine) => ({
        shard: engine.shard,
        state: engine.state.kind,
        appliedSeqno: engine.position.nextSeqno - 1,
        frontierTs: engine.readTs,
      })),
      frontierTs: sync.currentTs,
      // A writer is the source of its shards: while it writes, it is never behind.
      stalenessMs: sharded.engines.every((engine) => engine.state.kind === "writing") ? 0 : null,
      sessions: sync.sessionCount,
    });
    const api = new HttpApi({
      backend,
      verifier: options.verifier,
      adminKey: options.adminKey,
      health,
      adminStatus: () => ({
        ...health(),
        sync: sync.stats(),
        functions: { conflicts: runtime.conflicts, deferrals: runtime.deferrals },
        process: processStatus(),
      }),
      metrics,
    });
    const assets = await buildWebAssets(options.webApp, () => statusPage(app));
    const server = await CairnServer.listen({ handler: sync, api, assets, log, clock, ...(options.pingIntervalMs !== undefined ? { pingIntervalMs: options.pingIntervalMs } : {}) }, { port: options.port, host: options.host });
    let stopping: Promise<void> | null = null;
    return {
      url: server.url,
      port: server.port,
      deploymentId: sharded.deploymentId,
      handler: sync,
      stop: () =>
        (stopping ??= (async () => {
          try {
            await server.stop();
          } finally {
            await sharded.close();
          }
        })()),
    };
  } catch (error) {
    await handler?.close(0);
    await sharded.close();
    throw error;
  }
}

/** Times every mutation from call to durable answer (the commit latency clients see, minus the network). */
function meteredBackend(backend: SyncBackend, metrics: ServerMetrics, clock: Clock): SyncBackend {
  return {
    deploymentId: backend.deploymentId,
    get readTs() {
      return backend.readTs;
    },
    runQuery: (path, args, options) => backend.runQuery(path, args, options),
    runMutation: async (path, args, options) => {
      const startedMs = clock.monotonicMs();
      const run = await backend.runMutation(path, args, options);
      if (!run.replayed) metrics.mutationFinished(clock.monotonicMs() - startedMs);
      return run;
    },
    runAction: (path, args, options) => backend.runAction(path, args, options),
    receipt: (clientId, seq) => backend.receipt(clientId, seq),
  };
}

/** Margin past a lease's expiry before trying again, for the holder's clock being a little behind ours. */
const LEASE_LAPSE_MARGIN_MS = 500;

/**
 * Acquires every shard. A lease another node holds is waited out once: a writer that
 * crashed leaves one behind that lapses by itself. If it was renewed meanwhile, its
 * writer is alive and this node refuses to start (LEASE_HELD) instead of waiting forever.
 */
async function acquireWaitingOutDeadLeases(sharded: ShardedStore, clock: Clock, log: (line: string) => void): Promise<void> {
  for (const engine of sharded.engines) {
    let waitedFor: number | null = null;
    for (;;) {
      try {
        await engine.acquire();
        break;
      } catch (error) {
        if (!hasErrorCode(error, "LEASE_HELD")) throw error;
        const held = error as CairnError;
        const expiresAt = Number(held.details["leaseExpiresAt"]);
        if (waitedFor !== null && expiresAt > waitedFor) {
          throw new CairnError("LEASE_HELD", `${held.message}, and its writer renewed the lease while this node waited: it is alive; stop it first`, { details: held.details });
        }
        waitedFor = expiresAt;
        const waitMs = Math.max(0, expiresAt - clock.nowMs()) + LEASE_LAPSE_MARGIN_MS;
        log(`shard ${engine.shard}: ${held.message}; waiting ${(waitMs / 1000).toFixed(1)} s for that lease to lapse (a crashed writer's lease expires by itself)`);
        await clock.sleep(waitMs);
      }
    }
  }
}

/** This process's CPU time and memory, for operators and benchmarks (µs and bytes). */
function processStatus() {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return { cpuUserUs: cpu.user, cpuSystemUs: cpu.system, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed };
}
