import { resolve } from "node:path";
import { systemClock, type Clock, ConditionWaiters, CairnError, FORWARD_TAKEOVER_GRACE_MS, hasErrorCode, systemRandom } from "../base/index.js";
import { backfillIndexes, FunctionRuntime, readCatalog, resolveCatalog, type App, type Catalog } from "../functions/index.js";
import { isLeaseLive, type Manifest } from "../manifest/index.js";
import { ObservedObjectStore, type ObjectStore } from "../objectstore/index.js";
import { LayoutWatcher, type LayoutRetired, LeaseWatcher, NodeRegistry, type NodeRole, ShardTailer, type TailerTuning, WakeHintSender } from "../replica/index.js";
import { type ShardEngineTuning, type EngineEvent, type ShardEngine, ShardedStore } from "../shard/index.js";
import { runtimeBackend, SyncHandler, type SyncBackend, type TokenVerifier } from "../sync/index.js";
import { CairnServer } from "./CairnServer.js";
import { HttpApi } from "./HttpApi.js";
import { nodeBackend } from "./nodeBackend.js";
import { retiredLayoutGuard } from "./retiredLayoutGuard.js";
import { ServerMetrics } from "./ServerMetrics.js";
import { buildWebAssets, type WebApp } from "./WebAssets.js";
import { statusPage } from "./statusPage.js";
import { WriteForwarder, type WriterLocation } from "./WriteForwarder.js";

export interface NodeOptions {
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
  /** WebSocket sessions this node holds at once (default NODE_SESSIONS_MAX). */
  readonly sessionsMax?: number;
  /**
   * "writer" (default) acquires every shard at start, and after a fence serves as a
   * standby; "replica" tails and forwards writes; "standby" is a replica that takes over
   * a shard whose lease lapsed.
   */
  readonly role?: "writer" | "replica" | "standby";
  /** A replica that takes over like a standby. */
  readonly takeover?: boolean;
  /**
   * The shards a "writer" acquires at start (default: every shard). It follows the others
   * as a standby does: several nodes may each write some of a deployment's shards, every
   * one of them serving every query at the common frontier (DESIGN.md §5).
   */
  readonly ownShards?: readonly number[];
  /** The URL other nodes reach this one at (default: the URL it listens on). */
  readonly advertiseUrl?: string | null;
  /** Clock difference between nodes that takeovers tolerate (default 1 s; see LeaseWatcher). */
  readonly maxClockSkewMs?: number;
  readonly tailer?: Partial<TailerTuning>;
  /** Send (writer) and take (replica) wake hints; default true. Needs the admin key. */
  readonly wakeHints?: boolean;
  readonly leaseCheckIntervalMs?: number;
  /** Registry refresh cadence (default 30 s; entries live three times as long). */
  readonly registryIntervalMs?: number;
  readonly engineTuning?: Partial<ShardEngineTuning>;
  /** How long a client that has seen a newer ts than this node waits for it (Connect, a query's minTs). */
  readonly frontierWaitMs?: number;
  /** How often `globals` is read for a reshard that retired this node's layout (default LAYOUT_CHECK_INTERVAL_MS). */
  readonly layoutCheckIntervalMs?: number;
  /**
   * A reshard retired the layout this node serves: it has stopped serving it (calls fail
   * with DEPLOYMENT_RESHARDED, sessions end, health says "stopped" and why). The caller
   * stops the node and may open one on the new layout (startNodeAcrossReshards).
   */
  readonly onLayoutRetired?: (retired: LayoutRetired) => void;
  /** Runs just before the node listens: startNodeAcrossReshards frees the port there. */
  readonly beforeListen?: () => Promise<void>;
}

export interface RunningNode {
  readonly url: string;
  readonly port: number;
  readonly deploymentId: string;
  readonly handler: SyncHandler;
  /** What the node is now: a writer of every shard, or a replica / standby of some. */
  role(): NodeRole;
  /** Why this node no longer serves its layout (a reshard retired it), or null while it does. */
  layoutRetired(): LayoutRetired | null;
  /** Stops accepting, drains, ends sessions, relinquishes the leases and closes the files. */
  stop(): Promise<void>;
}

export const MAX_CLOCK_SKEW_MS_DEFAULT = 1_000;
/**
 * Registry renewal: a PUT every 30 s is 120 an hour per node (~$0.44 a month at S3
 * Standard), and a writer learns of a new replica (starts hinting it) within 30 s.
 */
const REGISTRY_INTERVAL_MS_DEFAULT = 30_000;
/** A replica whose copy was last known complete longer ago than this reports "degraded". */
const STALE_AFTER_MS = 10_000;

/**
 * Assembles a node (DESIGN.md §9) of any role: the deployment's shards opened, the
 * functions runtime over every shard, the
 * sync handler fed by every segment applied locally — the writer's own commits and the
 * tailer's — metrics, and the HTTP/WebSocket server. Then, by role: acquire every shard
 * (writer), or tail, forward writes and, with takeover, watch the leases.
 *
 * Roles change at run time without a restart: a standby that acquires a shard writes it
 * (its tailer idles, its sessions' mutations run locally); a writer that finds itself
 * fenced or poisoned stops writing at once and goes on as a standby (tailing, forwarding,
 * re-acquiring when the lease is free again — at once for its own poisoned lease).
 *
 * Every step that can refuse (the schema, the port, a live lease for a writer) runs
 * before the node says it is ready; whatever was opened is closed again when a later
 * step fails.
 */
export async function startNode(options: NodeOptions): Promise<RunningNode> {
  const { app, log, nodeId } = options;
  const role = options.role ?? "writer";
  const takeover = role !== "replica" || options.takeover === true;
  const clock = options.clock ?? systemClock;
  const maxClockSkewMs = options.maxClockSkewMs ?? MAX_CLOCK_SKEW_MS_DEFAULT;
  let handler: SyncHandler | null = null;
  const metrics = new ServerMetrics(() => handler!.stats());
  const store = new ObservedObjectStore(options.store, (call) => metrics.storeCall(call), () => clock.monotonicMs());
  let serverUrl: string | null = null;
  const advertisedUrl = () => options.advertiseUrl ?? serverUrl;
  const events = new Set<(event: EngineEvent) => void>();
  // Whether other nodes (replicas, standbys) read the shards' common frontier from the
  // bucket: idle shards tick for them. From the registry, listed every registryIntervalMs.
  let frontierReaders = false;
  const sharded = await ShardedStore.open({
    store,
    localDirectory: resolve(options.localDirectory),
    nodeId,
    nodeUrl: advertisedUrl,
    ...(options.numShards !== undefined ? { numShards: options.numShards } : {}),
    mustExist: role !== "writer",
    // A replica serves what it has at once; its first catch-up below may fail (and say so).
    catchUpOnOpen: role === "writer",
    frontierWanted: () => frontierReaders,
    tuning: { clockSkewMsMax: maxClockSkewMs, ...options.engineTuning },
    onEvent: (event) => {
      metrics.engineEvent(event);
      options.onEngineEvent?.(event);
      for (const listener of events) listener(event);
    },
  });
  const stopping: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const step of stopping.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        log(`while stopping: ${(error as Error).message}`);
      }
    }
  };
  stopping.push(() => sharded.close());
  try {
    // Before any lease: a schema change the deployment refuses must not leave a lease to wait out.
    const catalog: Catalog = role === "writer" ? await resolveCatalog(store, app.schema, systemRandom) : await readCatalog(store, app.schema, systemRandom);
    log(`deployment ${sharded.deploymentId}: ${sharded.numShards} shard(s), local files in ${resolve(options.localDirectory)}; this node starts as ${role}${role === "replica" && takeover ? " (with takeover)" : ""}`);
    const engines = sharded.engines;
    const runtime = new FunctionRuntime({ app, catalog, log, shards: { shards: engines, get readTs() { return sharded.readTs; } } });
    log(`functions run on ${engines.length} shard(s); tables: ${[...runtime.catalog.tables].map((table) => `${table.name} (#${table.number}${table.shardKey === null ? "" : `, sharded by ${table.shardKey}`})`).join(", ")}`);
    const local = runtimeBackend(sharded.deploymentId, runtime, sharded);
    const forwarders = engines.map(
      (shardEngine) =>
        new WriteForwarder({
          adminKey: options.adminKey,
          selfNodeId: nodeId,
          clock,
          writer: () => writerOf(shardEngine.manifestCurrent),
          refreshWriter: async () => writerOf(await shardEngine.refreshManifest()),
        }),
    );
    const ownShards = role === "writer" ? shardsToOwn(options.ownShards, engines.length) : [];
    let tailers: ShardTailer[] = [];
    let acquiringAtStart = new Set(ownShards);
    const writingWaiters = new ConditionWaiters(clock);
    const awaitWriting = (shard: number, timeoutMs: number) => writingWaiters.wait(() => engines[shard]!.state.kind === "writing", timeoutMs);
    // An acquire ended (or the one at start failed): every waiter learns whether writes run here now.
    const writingChanged = () => writingWaiters.settleAll();
    const writesEveryShard = () => engines.every((shardEngine) => shardEngine.state.kind === "writing");
    // Set once a reshard retired the layout: nothing of it is served from then on.
    let retired: LayoutRetired | null = null;
    let layoutWatcher: LayoutWatcher | null = null;
    const backend = retiredLayoutGuard(() => retired, meteredBackend(
      nodeBackend({
        local,
        shards: engines.length,
        mutationShard: (path, args) => runtime.mutationShard(path, args),
        engineState: (shard) => engines[shard]!.state,
        forwarder: (shard) => forwarders[shard]!,
        becomingWriter: (shard) => acquiringAtStart.has(shard) || engines[shard]!.manifestCurrent.writer?.nodeId === nodeId,
        awaitWriting,
        waitForTs: (ts, timeoutMs) => sync.waitForTs(ts, timeoutMs),
        wakeTail: (shard) => tailers[shard]?.wake(),
        nodeId,
        random: systemRandom,
        clock,
        forwardAttemptTimeoutMs: sharded.engines[0]!.tuning.leaseTtlMs + maxClockSkewMs,
        writerLeaseLive: (shard) => isLeaseLive(sharded.engines[shard]!.manifestCurrent, clock.nowMs()),
        takeoverWaitMs: maxClockSkewMs + FORWARD_TAKEOVER_GRACE_MS,
      }),
      metrics,
      clock,
    ));
    const sync = new SyncHandler({ backend, verifier: options.verifier, log, clock, ...(options.frontierWaitMs !== undefined ? { connectFrontierWaitMs: options.frontierWaitMs } : {}) });
    handler = sync;
    stopping.push(() => sync.close(0));
    // Once the tailers stopped, the frontier never moves again: waits for it end now.
    stopping.push(async () => sync.frontierFinal());
    // The sync handler hears of every applied segment before anything else does (the
    // tailers' waiters and watermarks come after it: at-least-once invalidation).
    for (const shardEngine of engines) {
      shardEngine.onSegmentApplied((segment) => sync.segmentApplied(segment));
      shardEngine.onRestored((ts) => sync.storeRestored(ts));
      shardEngine.onFrontierMoved(() => sync.frontierMoved());
    }
    const tailingError = (logError: (error: unknown) => void) => (error: unknown) => {
      // The shard's manifest is gone: a reshard may have retired the layout.
      if (hasErrorCode(error, "MANIFEST_INVALID")) layoutWatcher?.check();
      logError(error);
    };
    tailers = sharded.engines.map(
      (shardEngine) =>
        new ShardTailer({
          engine: shardEngine,
          consumerId: nodeId,
          clock,
          ...(options.tailer ? { tuning: options.tailer } : {}),
          onError: tailingError(throttledLog(log, clock, `shard ${shardEngine.shard}: tailing`)),
        }),
    );
    stopping.push(() => Promise.all(tailers.map((tailer) => tailer.stop({ removeWatermark: true }))).then(() => undefined));
    // After the server drained: forwards still waiting for a writer are abandoned, not left holding the process.
    stopping.push(async () => forwarders.forEach((forwarder) => forwarder.close()));

    let listPeersNow: (() => void) | null = null;
    const hintsWanted = options.wakeHints ?? true;
    const hintSender = hintsWanted && options.adminKey !== null ? new WakeHintSender({ adminKey: options.adminKey }) : null;
    events.add((event) => onRoleEvent(event));
    const onRoleEvent = (event: EngineEvent) => {
      const shardEngine = sharded.engines[event.shard];
      if (shardEngine === undefined) return;
      switch (event.type) {
        case "created":
          hintSender?.hint({ shard: event.shard, seqno: event.seqno, verifying: true });
          return;
        case "flushed":
          hintSender?.hint({ shard: event.shard, seqno: event.seqno, hash: event.hash });
          return;
        case "acquired":
          hintSender?.hint({ shard: event.shard, seqno: event.fenceSeqno, hash: event.fenceHash });
          writingChanged();
          // What this node still forwards for the shard runs here now.
          forwarders[event.shard]?.writerChanged({ nodeId, url: advertisedUrl() });
          // A new writer of a shard others follow: find them now (hints, frontier ticks), not at the next renewal.
          listPeersNow?.();
          // A writer needs no watermark of its own (its GC would wait for it).
          void (tailers[event.shard]?.removeWatermark() ?? shardEngine.watermarkStore.remove(nodeId)).catch(() => undefined);
          return;
        case "writer-changed":
          // A reshard takes every old shard's lease (a new writer): watch for its switch.
          layoutWatcher?.check();
          // Forwards to the writer that lost the shard are re-routed to the new one, which
          // learns at once that this node reads its frontier.
          forwarders[event.shard]?.writerChanged(event.writer);
          if (event.writer !== null && event.writer.nodeId !== nodeId && event.writer.url !== null) void announceTo([event.writer.url], nodeId, advertisedUrl(), options.adminKey);
          return;
        case "fenced":
        case "poisoned":
          // A reshard fences a writer whose lease lapsed (paused past it) as it takes the old shards.
          if (event.type === "fenced") layoutWatcher?.check();
          log(`shard ${event.shard}: ${event.type} (${event.error.message}); no longer writing it: serving it as a ${takeover ? "standby" : "replica"}, tailing the log and forwarding writes`);
          tailers[event.shard]?.wake();
          return;
        default:
          return;
      }
    };

    const nodeRole = (): NodeRole => (sharded.engines.every((candidate) => candidate.state.kind === "writing") ? "writer" : takeover ? "standby" : "replica");
    const health = () => {
      const shards = sharded.engines.map((shardEngine, index) => {
        const status = tailers[index]!.status();
        const manifest = shardEngine.manifestCurrent;
        return {
          shard: shardEngine.shard,
          state: shardEngine.state.kind,
          appliedSeqno: status.appliedSeqno,
          frontierTs: status.frontierTs,
          stalenessMs: status.stalenessMs,
          lastError: status.lastError,
          writer: manifest.writer?.nodeId ?? null,
          epoch: manifest.epoch,
          // As this node last read the manifest (a follower re-reads it every manifestRefreshMs).
          leaseExpiresAt: manifest.writer === null ? null : new Date(manifest.leaseExpiresAt).toISOString(),
          writerLive: shardEngine.state.kind === "writing" || isLeaseLive(manifest, clock.nowMs()),
        };
      });
      const staleness = shards.map((shard) => shard.stalenessMs);
      const stalenessMs = staleness.some((value) => value === null) ? null : Math.max(...(staleness as number[]));
      const current = nodeRole();
      // The node reads at the lowest shard frontier: a commit on another shard stays
      // invisible until that shard's frontier passes it. Name the shard that holds reads
      // back, by how long, and whether it has a live writer: a shard without one holds
      // every read back until a writer or standby takes it over (a replica cannot: only a
      // fence closes a dead writer's log), which health then reports as degraded.
      const lowest = shards.reduce((held, shard) => (shard.frontierTs < held.frontierTs ? shard : held), shards[0]!);
      const highestTs = Math.max(...shards.map((shard) => shard.frontierTs));
      const heldBackMs = Math.round((highestTs - lowest.frontierTs) / 1000);
      const healthy =
        current === "writer" ||
        (stalenessMs !== null && stalenessMs <= STALE_AFTER_MS && heldBackMs <= STALE_AFTER_MS && shards.every((shard) => shard.lastError === null));
      return {
        status: retired !== null ? "stopped" : healthy ? "ok" : "degraded",
        ...(retired !== null ? { reason: retired.reason } : {}),
        role: current,
        nodeId,
        deploymentId: sharded.deploymentId,
        shards,
        frontierTs: sync.currentTs,
        frontierHeldBy: { shard: lowest.shard, heldBackMs, writer: lowest.writer, writerLive: lowest.writerLive },
        stalenessMs,
        sessions: sync.sessionCount,
      };
    };
    const api = new HttpApi({
      backend,
      log,
      verifier: options.verifier,
      adminKey: options.adminKey,
      health,
      adminStatus: () => ({
        ...health(),
        sync: sync.stats(),
        functions: { conflicts: runtime.conflicts, deferrals: runtime.deferrals },
        hints: hintSender?.stats() ?? null,
        process: processStatus(),
      }),
      metrics,
      forwardedTo: retiredLayoutGuard(() => retired, meteredBackend(local, metrics, clock)),
      waitForTs: (ts, timeoutMs) => sync.waitForTs(ts, timeoutMs),
      peerJoined: (peer) => {
        if (peer.nodeId === nodeId) return;
        // It reads the shards' common frontier: idle shards tick from now on, not from the next registry listing.
        frontierReaders = true;
        hintSender?.addTarget(peer);
      },
      ...(options.frontierWaitMs !== undefined ? { frontierWaitMs: options.frontierWaitMs } : {}),
      ...(hintsWanted ? { hinted: (hints) => hints.forEach((hint) => tailers[hint.shard]?.hinted(hint)) } : {}),
    });

    for (const shardEngine of sharded.engines) {
      const meta = shardEngine.local.meta();
      log(`shard ${shardEngine.shard}: local copy through seqno ${meta.appliedSeqno}, frontier ts ${meta.frontierTs}`);
    }
    if (role !== "writer") {
      // Serve what the local copy has at once if the bucket cannot give more: the error
      // shows in /api/health as staleness and lastError, and the tailer keeps trying.
      for (const shardEngine of sharded.engines) {
        try {
          const report = await shardEngine.catchUpToTail();
          log(`shard ${shardEngine.shard}: caught up through seqno ${shardEngine.position.nextSeqno - 1}${report.restoredFromSeqno !== null ? ` (restored the snapshot at ${report.restoredFromSeqno})` : ""}`);
        } catch (error) {
          log(`shard ${shardEngine.shard}: cannot catch up (${(error as Error).message}); serving the local copy through seqno ${shardEngine.position.nextSeqno - 1}, and retrying`);
        }
      }
    }
    const assets = await buildWebAssets(options.webApp, () => statusPage(app));
    await options.beforeListen?.();
    const server = await CairnServer.listen(
      {
        handler: sync,
        api,
        assets,
        log,
        clock,
        ...(options.pingIntervalMs !== undefined ? { pingIntervalMs: options.pingIntervalMs } : {}),
        ...(options.sessionsMax !== undefined ? { sessionsMax: options.sessionsMax } : {}),
      },
      { port: options.port, host: options.host },
    );
    serverUrl = server.url;
    stopping.push(() => server.stop());

    if (role === "writer") {
      try {
        await acquireWaitingOutDeadLeases(ownShards.map((shard) => engines[shard]!), clock, log, maxClockSkewMs);
      } finally {
        acquiringAtStart = new Set();
        writingChanged();
      }
      if (writesEveryShard()) await backfill(catalog, engines, store, log);
    }
    for (const tailer of tailers) tailer.start();

    const watchers = takeover
      ? sharded.engines.map(
          (shardEngine) =>
            new LeaseWatcher({
              engine: shardEngine,
              nodeId,
              clock,
              maxClockSkewMs,
              ...(options.leaseCheckIntervalMs !== undefined ? { checkIntervalMs: options.leaseCheckIntervalMs } : {}),
              onAcquired: () => {
                log(`shard ${shardEngine.shard}: took over as the writer (epoch ${shardEngine.manifestCurrent.epoch})`);
                if (writesEveryShard()) void backfill(catalog, engines, store, log).catch((error: unknown) => log(`index backfill failed: ${(error as Error).message}`));
              },
              onError: throttledLog(log, clock, `shard ${shardEngine.shard}: lease watch`),
            }),
        )
      : [];
    for (const watcher of watchers) watcher.start();
    // Stopped before the server: no takeover while the node drains.
    const stopWatchers = () => Promise.all(watchers.map((watcher) => watcher.stop())).then(() => undefined);

    // A writer prunes local history in its maintenance driver; a follower here, on the same cadence.
    const pruneStop = new AbortController();
    const pruneLoop = (async () => {
      const intervalMs = sharded.engines[0]!.tuning.maintenanceIntervalMs;
      while (!pruneStop.signal.aborted) {
        try {
          await clock.sleep(intervalMs, pruneStop.signal);
        } catch {
          return;
        }
        for (const shardEngine of sharded.engines) {
          if (shardEngine.state.kind === "writing" || shardEngine.state.kind === "closed") continue;
          try {
            await shardEngine.pruneLocal();
          } catch (error) {
            log(`shard ${shardEngine.shard}: pruning local history failed: ${(error as Error).message}`);
          }
        }
      }
    })();
    stopping.push(async () => {
      pruneStop.abort();
      await pruneLoop;
    });

    layoutWatcher = new LayoutWatcher({
      store,
      random: systemRandom,
      clock,
      generation: sharded.generation,
      ...(options.layoutCheckIntervalMs !== undefined ? { intervalMs: options.layoutCheckIntervalMs } : {}),
      onRetired: (why) => {
        retired = why;
        log(`${why.reason}: this node stops serving it (calls fail with DEPLOYMENT_RESHARDED; health says "stopped")`);
        for (const tailer of tailers) void tailer.stop();
        void sync.close(0);
        options.onLayoutRetired?.(why);
      },
      onError: throttledLog(log, clock, "layout watch"),
    });
    layoutWatcher.start();
    const stopLayoutWatcher = layoutWatcher;
    stopping.push(() => stopLayoutWatcher.stop());

    const registry = new NodeRegistry(store, sharded.deploymentId, nodeId, systemRandom);
    const registryIntervalMs = options.registryIntervalMs ?? REGISTRY_INTERVAL_MS_DEFAULT;
    const registryStop = new AbortController();
    const registryLog = throttledLog(log, clock, "node registry");
    const refreshRegistry = async () => {
      try {
        await registry.register({ url: advertisedUrl(), role: nodeRole() }, clock.nowMs(), registryIntervalMs * 3);
        if ((hintSender !== null || sharded.numShards > 1) && sharded.engines.some((candidate) => candidate.state.kind === "writing")) {
          const peers = await registry.live(clock.nowMs());
          frontierReaders = peers.length > 0;
          hintSender?.setTargets(peers.filter((peer) => peer.url !== null).map((peer) => ({ nodeId: peer.nodeId, url: peer.url! })));
        }
      } catch (error) {
        registryLog(error);
      }
    };
    await refreshRegistry();
    listPeersNow = () => void refreshRegistry();
    // Every node tells the writers of the shards it follows that it reads their frontier.
    void announceToWriters(sharded, nodeId, advertisedUrl(), options.adminKey);
    const registryLoop = (async () => {
      while (!registryStop.signal.aborted) {
        try {
          await clock.sleep(registryIntervalMs, registryStop.signal);
        } catch {
          return;
        }
        await refreshRegistry();
      }
    })();
    stopping.push(async () => {
      registryStop.abort();
      await registryLoop;
      hintSender?.close();
      await registry.remove().catch(() => undefined);
    });

    let stopped: Promise<void> | null = null;
    return {
      url: server.url,
      port: server.port,
      deploymentId: sharded.deploymentId,
      handler: sync,
      role: nodeRole,
      layoutRetired: () => retired,
      stop: () =>
        (stopped ??= (async () => {
          await stopWatchers();
          await stopAll();
        })()),
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * Tells each shard's writer that this node follows it (`POST /api/internal/peer`), so that
 * it hints it and ticks its idle shards at once rather than after its next registry
 * listing (up to 30 s). Best-effort: the registry finds the node anyway.
 */
async function announceToWriters(sharded: ShardedStore, nodeId: string, url: string | null, adminKey: string | null): Promise<void> {
  const writers = new Set<string>();
  for (const engine of sharded.engines) {
    const writer = engine.manifestCurrent.writer;
    if (writer !== null && writer.nodeId !== nodeId && writer.url !== null) writers.add(writer.url);
  }
  await announceTo([...writers], nodeId, url, adminKey);
}

/** `POST /api/internal/peer` to each of `writerUrls`: this node follows them. Best-effort. */
async function announceTo(writerUrls: readonly string[], nodeId: string, url: string | null, adminKey: string | null): Promise<void> {
  if (url === null || adminKey === null) return;
  await Promise.all(
    writerUrls.map(async (writerUrl) => {
      try {
        const response = await fetch(new URL("api/internal/peer", writerUrl), {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Admin ${adminKey}` },
          body: JSON.stringify({ nodeId, url }),
          signal: AbortSignal.timeout(2_000),
        });
        await response.body?.cancel();
      } catch {
        // The writer learns of this node from the registry instead.
      }
    }),
  );
}

/** The shards a writer acquires at start: `ownShards` checked against the deployment, or every one. */
function shardsToOwn(ownShards: readonly number[] | undefined, numShards: number): number[] {
  if (ownShards === undefined) return Array.from({ length: numShards }, (_, shard) => shard);
  for (const shard of ownShards) {
    if (!Number.isSafeInteger(shard) || shard < 0 || shard >= numShards) {
      throw new CairnError("INVALID_ARGUMENT", `cannot own shard ${String(shard)}: the deployment has shards 0..${numShards - 1}`);
    }
  }
  return [...new Set(ownShards)].sort((a, b) => a - b);
}

function writerOf(manifest: Manifest): WriterLocation | null {
  return manifest.writer === null ? null : { nodeId: manifest.writer.nodeId, url: manifest.writer.url };
}

async function backfill(catalog: Catalog, engines: readonly ShardEngine[], store: ObjectStore, log: (line: string) => void): Promise<void> {
  const backfilled = await backfillIndexes({
    catalog,
    shards: engines,
    store,
    random: systemRandom,
    onProgress: (progress) => log(`backfilling index ${progress.table}.${progress.index}: ${progress.documents} document(s)`),
  });
  for (const index of backfilled) log(`index ${index.table}.${index.index} is ready (${index.documents} document(s) indexed)`);
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
    receipt: (clientId, seq, identity) => backend.receipt(clientId, seq, identity),
  };
}

/**
 * Acquires every shard. A lease another node holds is waited out once (plus the clock
 * skew the deployment tolerates): a writer that crashed leaves one behind that lapses by
 * itself. If it was renewed meanwhile, its writer is alive and this node refuses to
 * start (LEASE_HELD) instead of waiting forever — start it with --standby to wait.
 */
async function acquireWaitingOutDeadLeases(engines: readonly ShardEngine[], clock: Clock, log: (line: string) => void, maxClockSkewMs: number): Promise<void> {
  for (const engine of engines) {
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
          throw new CairnError("LEASE_HELD", `${held.message}, and its writer renewed the lease while this node waited: it is alive; stop it first, or start this node with --standby`, { details: held.details });
        }
        waitedFor = expiresAt;
        const waitMs = Math.max(0, expiresAt - clock.nowMs()) + maxClockSkewMs;
        log(`shard ${engine.shard}: ${held.message}; waiting ${(waitMs / 1000).toFixed(1)} s for that lease to lapse (a crashed writer's lease expires by itself)`);
        await clock.sleep(waitMs);
      }
    }
  }
}

/** Logs an error the first time, when its code changes, and at most once a minute otherwise. */
function throttledLog(log: (line: string) => void, clock: Clock, what: string): (error: unknown) => void {
  let lastCode: string | null = null;
  let lastAtMs = Number.NEGATIVE_INFINITY;
  return (error) => {
    const code = typeof (error as { code?: unknown })?.code === "string" ? (error as { code: string }).code : "INTERNAL";
    const nowMs = clock.monotonicMs();
    if (code === lastCode && nowMs - lastAtMs < 60_000) return;
    lastCode = code;
    lastAtMs = nowMs;
    log(`${what}: [${code}] ${(error as Error)?.message ?? String(error)}`);
  };
}

/** This process's CPU time and memory, for operators and benchmarks (µs and bytes). */
function processStatus() {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return { cpuUserUs: cpu.user, cpuSystemUs: cpu.system, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed };
}
