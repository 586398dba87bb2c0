import { resolve } from "node:path";
import { ACTION_RUN_MS_MAX, FILE_BYTES_MAX, FILE_GC_GRACE_MS, UPLOAD_DURATION_MS_MAX, systemClock, type Clock, CairnError, FORWARD_TAKEOVER_GRACE_MS, HINT_SEGMENT_BYTES_MAX, hasErrorCode, repeatEvery, systemRandom } from "../base/index.js";
import { FleetBalancer, type FleetBeat, type FleetTuning, type NodeRole, PeerChecks, PeerClient, PeerDiscovery, resolveFleetTuning, type RoleChange, ShardRoles, WakeHintSender } from "../fleet/index.js";
import { backfilling, backfillIndexes, dropRemoved, FunctionRuntime, readCatalog, refreshIndexStates, resolveCatalog, type App, type Catalog } from "../functions/index.js";
import { isLeaseLive, type Manifest } from "../manifest/index.js";
import { ObservedObjectStore, type ObjectStore } from "../objectstore/index.js";
import { LayoutWatcher, type LayoutRetired, LeaseWatcher, ShardTailer, type TailerTuning } from "../replica/index.js";
import { resolveTuning, type ShardEngineTuning, type EngineEvent, type ShardEngine, ShardedStore } from "../shard/index.js";
import { LogFeed, LogRing, runtimeBackend, SyncHandler, type LogEntriesFrame, type LogEntry, type SyncBackend, type TokenVerifier } from "../sync/index.js";
import { AdminApi } from "./AdminApi.js";
import { adminSources } from "./adminSources.js";
import { followerWatermarks } from "./followerWatermarks.js";
import type { LoginCodes } from "./LoginCodes.js";
import { MaintenanceLog } from "./MaintenanceLog.js";
import { MetricsHistory } from "./MetricsHistory.js";
import { StoreRequestWindow } from "./storeCost.js";
import { CairnServer } from "./CairnServer.js";
import { BranchRenewal } from "./BranchRenewal.js";
import { FRONTIER_STALL_WARN_MS, FrontierWatch } from "./FrontierWatch.js";
import { HttpApi } from "./HttpApi.js";
import { nodeBackend } from "./nodeBackend.js";
import { nodeHealth } from "./nodeHealth.js";
import { OrderedShutdown } from "./OrderedShutdown.js";
import { retiredLayoutGuard } from "./retiredLayoutGuard.js";
import { ServerMetrics } from "./ServerMetrics.js";
import { buildWebAssets, type WebApp } from "./WebAssets.js";
import { statusPage } from "./statusPage.js";
import { StaticFiles } from "./StaticFiles.js";
import { CorsPolicy, type CorsOrigin } from "./CorsPolicy.js";
import { WriteForwarder, type WriterLocation } from "./WriteForwarder.js";
import { checkHttpActionsPath, HTTP_ACTIONS_PATH_DEFAULT, HttpActions } from "./HttpActions.js";
import { JobRunner } from "./JobRunner.js";
import { FileCollector } from "./FileCollector.js";
import { fileUploadSecret, FileStore } from "./FileStore.js";

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
  /** The browser app at `/` (null: a status page, or the static directory's index.html). */
  readonly webApp: WebApp | null;
  /**
   * A built web app's directory (vite's dist/), served behind Cairn's routes with its
   * index.html at `/` and for the app's own routes (see StaticFiles). Not with `webApp`.
   * INVALID_ARGUMENT at start if it does not exist or has no index.html.
   */
  readonly staticDir?: string | null;
  /**
   * The origins whose pages may call the API, load `/cairn-client.js` and open the sync
   * socket besides the node's own (default none: same-origin only); LOCALHOST_ORIGINS for
   * any page on this machine, `*` for any page at all. See CorsPolicy.
   */
  readonly corsOrigins?: readonly CorsOrigin[];
  /** Where the app's HTTP actions are served (default HTTP_ACTIONS_PATH_DEFAULT, "/http"). */
  readonly httpActionsPath?: string;
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
   * a shard whose lease lapsed; "fleet" joins the deployment's fleet: it writes the shards
   * rendezvous hashing gives it among the live nodes and follows the rest.
   */
  readonly role?: "writer" | "replica" | "standby" | "fleet";
  /** A fleet node's beat and presence TTL (validated against the lease). */
  readonly fleet?: Partial<FleetTuning>;
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
  /** How long the common frontier (or a followed shard's tail) may stand still while commits wait on it before a warning is logged (default 5 s). */
  readonly frontierStallWarnMs?: number;
  /** Runs just before the node listens: startNodeAcrossReshards frees the port there. */
  readonly beforeListen?: () => Promise<void>;
  /** Each function call's log entry as it ends (`--log-format json` prints them); the node's ring keeps them anyway. */
  readonly onFunctionLog?: (entry: LogEntry) => void;
  /** Whether functions' console lines are also printed as they happen (default true; false when entries are printed whole). */
  readonly echoFunctionConsole?: boolean;
  /** One-time dashboard login codes (`cairn dev`); default none. */
  readonly loginCodes?: LoginCodes | null;
  /** Largest file an upload or an action may store (default FILE_BYTES_MAX, 1 GiB). */
  readonly fileBytesMax?: number;
  /** How long chunks no stored file refers to are kept before they are deleted (default FILE_GC_GRACE_MS), and how often the collector looks. */
  readonly fileCollector?: { readonly graceMs?: number; readonly intervalMs?: number };
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
  /**
   * Serves `app` from now on without a restart (`cairn dev`): its schema is registered
   * (a writer) or checked against the deployment's (a follower) first — a change the
   * deployment refuses throws SCHEMA_CHANGE_REFUSED / SCHEMA_NOT_DEPLOYED and the old app
   * keeps serving — then calls run the new functions and every live subscription re-runs.
   */
  reloadApp(app: App): Promise<void>;
  /** Stops accepting, drains, ends sessions, relinquishes the leases and closes the files. */
  stop(): Promise<void>;
}

export const MAX_CLOCK_SKEW_MS_DEFAULT = 1_000;
/** How often a node re-reads the schema catalog while an index is backfilling (a GET each time, only then). */
const CATALOG_REFRESH_MS = 2_000;

/**
 * Assembles a node (DESIGN.md §9) of any role from its parts: the deployment's shards
 * opened, the role machine over them (ShardRoles), the functions runtime over every
 * shard, the sync handler fed by every segment applied locally — the writer's own commits
 * and the tailers' — write forwarding, peer discovery, health, metrics, and the
 * HTTP/WebSocket server. Then, by role: acquire the shards to own (writer), and for the
 * rest tail, forward writes and, with takeover, watch the leases.
 *
 * Roles change at run time without a restart, one shard at a time and only through the
 * role machine: a standby that acquires a shard writes it (its tailer idles, its sessions'
 * mutations run locally); a writer that finds itself fenced or poisoned stops writing at
 * once and goes on as a standby (tailing, forwarding, re-acquiring when the lease is free
 * again — at once for its own poisoned lease). The parts react to role changes
 * (`CairnNode.roleChanged`); none decides them.
 *
 * Every step that can refuse (the schema, the port, a live lease for a writer) runs
 * before the node says it is ready; whatever was opened is closed again, in reverse order,
 * when a later step fails (OrderedShutdown).
 */
export async function startNode(options: NodeOptions): Promise<RunningNode> {
  const shutdown = new OrderedShutdown(options.log);
  try {
    return await CairnNode.assemble(options, shutdown);
  } catch (error) {
    await shutdown.run();
    throw error;
  }
}

/** A node's parts, wired together. Built by `assemble`, stopped by its OrderedShutdown. */
class CairnNode implements RunningNode {
  readonly url: string;
  readonly port: number;
  readonly deploymentId: string;
  /** Set once a reshard retired the layout: nothing of it is served from then on. */
  private retired: LayoutRetired | null = null;
  /** Set once the start-up acquires ended: from then on, each shard this node comes to write runs the index backfill. */
  private started = false;
  private stopped: Promise<void> | null = null;
  /** Whether the loop of watchIndexStates runs (one at a time). */
  private watchingIndexStates = false;

  private constructor(
    private readonly options: NodeOptions,
    private readonly parts: NodeParts,
    server: CairnServer,
    private readonly shutdown: OrderedShutdown,
  ) {
    this.url = server.url;
    this.port = server.port;
    this.deploymentId = parts.sharded.deploymentId;
  }

  get handler(): SyncHandler {
    return this.parts.sync;
  }

  // Arrow properties: callers pass these around unbound (`stop: node.stop`).
  readonly role = (): NodeRole => (this.parts.balancer !== null ? "fleet" : this.parts.roles.writesEvery() ? "writer" : this.parts.takeover ? "standby" : "replica");

  readonly layoutRetired = (): LayoutRetired | null => this.retired;

  readonly stop = (): Promise<void> => (this.stopped ??= this.shutdown.run());

  readonly reloadApp = async (app: App): Promise<void> => {
    const { store, runtime, sync, balancer } = this.parts;
    const writes = (this.options.role ?? "writer") === "writer" || balancer !== null;
    const catalog = writes ? await resolveCatalog(store, app.schema, systemRandom, { shards: this.parts.sharded.engines }) : await readCatalog(store, app.schema, systemRandom);
    runtime.replaceApp(app, catalog);
    this.parts.catalog = catalog;
    sync.codeReplaced();
    this.parts.jobs?.appReplaced();
    this.options.log(`app reloaded: ${app.paths.length} function(s); tables: ${[...catalog.tables].map((table) => table.name).join(", ")}`);
    // A new index is backfilled (and waited for) as at start.
    if (this.parts.roles.writesAny()) void this.backfill().catch((error: unknown) => this.options.log(`index backfill or drop failed: ${(error as Error).message}`));
    this.watchIndexStates();
  };

  static async assemble(options: NodeOptions, shutdown: OrderedShutdown): Promise<CairnNode> {
    const { app, log, nodeId } = options;
    const role = options.role ?? "writer";
    const takeover = role !== "replica" || options.takeover === true;
    const clock = options.clock ?? systemClock;
    const maxClockSkewMs = options.maxClockSkewMs ?? MAX_CLOCK_SKEW_MS_DEFAULT;
    // Checked before anything opens: a fleet that could not fail over must not start.
    const fleetTuning = role === "fleet" ? resolveFleetTuning(options.fleet ?? {}, resolveTuning({ clockSkewMsMax: maxClockSkewMs, ...options.engineTuning }), maxClockSkewMs) : null;
    if (role !== "fleet" && options.fleet !== undefined) throw new CairnError("INVALID_ARGUMENT", "fleet tuning is for fleet nodes (role \"fleet\")");
    if (options.webApp !== null && options.staticDir != null) throw new CairnError("INVALID_ARGUMENT", "give a web app or a static directory, not both: each serves `/`");
    // Before anything is opened: a path over one of Cairn's own is refused with nothing touched.
    const httpActionsPath = options.httpActionsPath ?? HTTP_ACTIONS_PATH_DEFAULT;
    checkHttpActionsPath(httpActionsPath);
    const staticFiles = options.staticDir != null ? await StaticFiles.open(options.staticDir) : null;
    const cors = new CorsPolicy(options.corsOrigins ?? []);
    // Fleet nodes and writers may create the deployment and register the schema.
    const writes = role === "writer" || role === "fleet";
    // Filled in as the parts come up: an engine event during open finds none of them yet.
    const late: { node?: CairnNode; roles?: ShardRoles; sync?: SyncHandler; discovery?: PeerDiscovery; serverUrl?: string } = {};
    const metrics = new ServerMetrics(() => late.sync!.stats());
    const history = new MetricsHistory({ clock, random: systemRandom, transitionsCommitted: () => late.sync?.stats().transitionsCommitted ?? 0 });
    shutdown.add("metrics history", () => history.stop());
    const maintenance = new MaintenanceLog(clock);
    const storeRequests = new StoreRequestWindow(clock);
    const store = new ObservedObjectStore(
      options.store,
      (call) => {
        metrics.storeCall(call);
        history.storeCall();
        storeRequests.record(call.operation);
      },
      () => clock.monotonicMs(),
    );
    const advertisedUrl = () => options.advertiseUrl ?? late.serverUrl ?? null;
    const sharded = await ShardedStore.open({
      store,
      localDirectory: resolve(options.localDirectory),
      nodeId,
      nodeUrl: advertisedUrl,
      ...(options.numShards !== undefined ? { numShards: options.numShards } : {}),
      mustExist: !writes,
      // A replica serves what it has at once; its first catch-up below may fail (and say so).
      catchUpOnOpen: role === "writer",
      // Idle shards tick only while other nodes read the shards' common frontier.
      frontierWanted: () => late.discovery?.frontierReaders ?? false,
      tuning: { clockSkewMsMax: maxClockSkewMs, ...options.engineTuning },
      onEvent: (event) => {
        metrics.engineEvent(event);
        if (event.type === "flushed" && event.kind === "data") history.commitsApplied(event.units);
        maintenance.engineEvent(event);
        options.onEngineEvent?.(event);
        late.roles?.engineEvent(event);
        late.node?.engineEvent(event);
      },
    });
    shutdown.add("shards", () => sharded.close());
    // A branch's node keeps the parent holding what the branch reads.
    const branchRenewal = await BranchRenewal.start({ store, clock, random: systemRandom, log });
    if (branchRenewal !== null) shutdown.add("branch renewal", () => branchRenewal.stop());
    // Before any lease: a schema change the deployment refuses must not leave a lease to wait out.
    // A changed validator is checked against the documents of the local copies (caught up for a writer).
    const catalog: Catalog = writes ? await resolveCatalog(store, app.schema, systemRandom, { shards: sharded.engines }) : await readCatalog(store, app.schema, systemRandom);
    log(`deployment ${sharded.deploymentId}: ${sharded.numShards} shard(s), local files in ${resolve(options.localDirectory)}; this node starts as ${role}${role === "replica" && takeover ? " (with takeover)" : ""}`);
    const engines = sharded.engines;
    // Every call's log entry: kept in the node's ring (the dashboard's logs), and handed on.
    const logs = new LogRing();
    const runtime = new FunctionRuntime({
      app,
      catalog,
      log,
      shards: { shards: engines, get readTs() { return sharded.readTs; } },
      onCallEnded: (entry) => {
        const numbered = logs.add(entry);
        options.onFunctionLog?.(numbered);
      },
      echoConsole: options.echoFunctionConsole ?? true,
    });
    log(`functions run on ${engines.length} shard(s); tables: ${[...runtime.catalog.tables].map((table) => `${table.name} (#${table.number}${table.shardKey === null ? "" : `, sharded by ${table.shardKey}`})`).join(", ")}`);

    const roles = new ShardRoles({ engines, nodeId, clock });
    late.roles = roles;
    shutdown.add("roles", () => roles.closeAll());
    const peers = options.adminKey !== null ? new PeerClient({ adminKey: options.adminKey, clock }) : null;
    // Closed after the forwarders (shutdown runs in reverse): their tries are abandoned first.
    shutdown.add("peer sockets", () => peers?.close());
    const hintsWanted = options.wakeHints ?? true;
    const hints = hintsWanted && peers !== null ? new WakeHintSender({ peers }) : null;
    const forwarders = engines.map(
      (engine) =>
        new WriteForwarder({
          peers,
          selfNodeId: nodeId,
          clock,
          writer: () => writerOf(engine.manifestCurrent),
          refreshWriter: async () => writerOf(await engine.refreshManifest()),
        }),
    );
    const ownShards = role === "writer" ? shardsToOwn(options.ownShards, engines.length) : [];
    // Shards still to be acquired at start: writes for them wait for that, not for another writer.
    const startupAcquires = new Set(ownShards);
    const local = runtimeBackend(sharded.deploymentId, runtime, sharded);
    let tailers: readonly ShardTailer[] = [];
    const isRetired = () => late.node?.retired ?? null;
    const backend = retiredLayoutGuard(isRetired, meteredBackend(
      nodeBackend({
        local,
        shards: engines.length,
        mutationShard: (path, args, internal) => runtime.mutationShard(path, args, { internal }),
        writes: (shard) => roles.role(shard) === "writing",
        forwarder: (shard) => forwarders[shard]!,
        becomingWriter: (shard) => roles.acquiring(shard) || startupAcquires.has(shard) || engines[shard]!.manifestCurrent.writer?.nodeId === nodeId,
        awaitWriting: (shard, timeoutMs) => roles.waitUntilWriting(shard, timeoutMs),
        waitForTs: (ts, timeoutMs) => sync.waitForTs(ts, timeoutMs),
        wakeTail: (shard) => tailers[shard]?.committedElsewhere(),
        nodeId,
        random: systemRandom,
        clock,
        forwardAttemptTimeoutMs: engines[0]!.tuning.leaseTtlMs + maxClockSkewMs,
        writerLeaseLive: (shard) => isLeaseLive(engines[shard]!.manifestCurrent, clock.nowMs()),
        takeoverWaitMs: maxClockSkewMs + FORWARD_TAKEOVER_GRACE_MS,
      }),
      metrics,
      history,
      clock,
    ));
    const logSource = {
      follow: (send: (frame: LogEntriesFrame) => void) => {
        const feed = new LogFeed(logs, clock, send);
        feed.start();
        return feed;
      },
    };
    const sync = new SyncHandler({ backend, verifier: options.verifier, log, clock, adminKey: options.adminKey, logs: logSource, ...(options.frontierWaitMs !== undefined ? { connectFrontierWaitMs: options.frontierWaitMs } : {}) });
    late.sync = sync;
    shutdown.add("sessions", () => sync.close(0));
    // Once the tailers stopped, the frontier never moves again: waits for it end now.
    shutdown.add("frontier waits", () => sync.frontierFinal());
    // The sync handler hears of every applied segment before anything else does (the
    // tailers' waiters and watermarks come after it: at-least-once invalidation).
    for (const engine of engines) {
      engine.onSegmentApplied((segment) => sync.segmentApplied(segment));
      engine.onRestored((ts) => sync.storeRestored(ts));
      engine.onFrontierMoved(() => sync.frontierMoved());
    }
    let layoutWatcher: LayoutWatcher | null = null;
    tailers = engines.map(
      (engine) =>
        new ShardTailer({
          engine,
          consumerId: nodeId,
          clock,
          ...(options.tailer ? { tuning: options.tailer } : {}),
          onError: (error) => {
            // The shard's manifest is gone: a reshard may have retired the layout.
            if (hasErrorCode(error, "MANIFEST_INVALID")) layoutWatcher?.check();
            tailLog[engine.shard]!(error);
          },
        }),
    );
    const tailLog = engines.map((engine) => throttledLog(log, clock, `shard ${engine.shard}: tailing`));
    // Watermarks are removed only if this node's tailers ran (published them): a start that
    // failed earlier must not delete what another process under the same id published.
    let tailersStarted = false;
    shutdown.add("tailers", () => Promise.all(tailers.map((tailer) => tailer.stop({ removeWatermark: tailersStarted }))).then(() => undefined));
    // After the server drained: forwards still waiting for a writer are abandoned, not left holding the process.
    shutdown.add("forwarders", () => forwarders.forEach((forwarder) => forwarder.close()));
    const balancer =
      fleetTuning === null
        ? null
        : new FleetBalancer({ engines, roles, nodeId, clock, maxClockSkewMs, log, onError: throttledLog(log, clock, "fleet balancer"), beatIn: (delayMs) => late.discovery?.beatIn(delayMs) });
    const discovery = new PeerDiscovery({
      store,
      deploymentId: sharded.deploymentId,
      nodeId,
      clock,
      random: systemRandom,
      ...(fleetTuning !== null
        ? {
            intervalMs: fleetTuning.beatMs,
            ttlMs: fleetTuning.presenceTtlMs,
            fleet: {
              graceMs: maxClockSkewMs,
              log,
              checks: new PeerChecks({ clock, log, peers, maxClockSkewMs, beatMs: fleetTuning.beatMs }),
              onBeat: (beat: FleetBeat) => balancer!.beat(beat),
            },
          }
        : options.registryIntervalMs !== undefined
          ? { intervalMs: options.registryIntervalMs }
          : {}),
      url: advertisedUrl,
      role: () => late.node?.role() ?? (role === "fleet" ? "fleet" : role),
      writes: () => engines.filter((engine) => roles.role(engine.shard) === "writing").map((engine) => engine.shard),
      writesAny: () => roles.writesAny(),
      listsFollowers: hints !== null || sharded.numShards > 1,
      peers,
      hints,
      onError: throttledLog(log, clock, "node registry"),
    });
    late.discovery = discovery;
    // A fleet node claims its id before it writes anything under it (watermarks): a second
    // process with a live node's id stops here, having changed nothing of that node's.
    await discovery.claim();
    // A start that fails from here on removes the entry again; a running node's discovery
    // stops earlier in its shutdown (the step added at the end), before the server drains.
    shutdown.add("presence entry", () => discovery.stop());
    const parts: NodeParts = { sharded, catalog, store, runtime, roles, forwarders, tailers, sync, discovery, balancer, hints, takeover, clock, maxClockSkewMs };

    const api = new HttpApi({
      backend,
      log,
      verifier: options.verifier,
      adminKey: options.adminKey,
      health: () => late.node!.health(),
      adminStatus: () => ({
        ...late.node!.health(),
        sync: sync.stats(),
        functions: { conflicts: runtime.conflicts, deferrals: runtime.deferrals },
        hints: hints?.stats() ?? null,
        process: processStatus(),
      }),
      metrics,
      clock,
      admin: new AdminApi(
        adminSources({
          sharded,
          runtime,
          sync,
          discovery,
          logs,
          metrics: history,
          maintenance,
          followers: followerWatermarks({ store, random: systemRandom, clock, numShards: sharded.numShards }),
          storeRequests,
          health: () => late.node!.health(),
          url: advertisedUrl,
          adminKey: options.adminKey,
          loginCodes: options.loginCodes ?? null,
          httpActionsPath,
          store,
          clock,
          random: systemRandom,
        }),
      ),
      forwardedTo: retiredLayoutGuard(isRetired, meteredBackend(local, metrics, history, clock)),
      waitForTs: (ts, timeoutMs) => sync.waitForTs(ts, timeoutMs),
      peerJoined: (peer) => discovery.peerJoined(peer),
      ...(options.frontierWaitMs !== undefined ? { frontierWaitMs: options.frontierWaitMs } : {}),
      ...(hintsWanted ? { hinted: (received) => received.forEach((hint) => tailers[hint.shard]?.hinted(hint)) } : {}),
    });

    for (const engine of engines) {
      const meta = engine.local.meta();
      log(`shard ${engine.shard}: local copy through seqno ${meta.appliedSeqno}, frontier ts ${meta.frontierTs}`);
    }
    if (role !== "writer") await catchUpServingWhatIsThere(engines, log);
    const assets = await buildWebAssets(options.webApp, staticFiles === null ? statusPage() : null);
    // An upload must commit within half the collector's grace: the collector never takes a live upload's chunks.
    const fileGraceMs = options.fileCollector?.graceMs ?? FILE_GC_GRACE_MS;
    const uploadDurationMsMax = Math.min(UPLOAD_DURATION_MS_MAX, fileGraceMs / 2);
    const files = new FileStore({
      store,
      backend,
      runtime,
      secret: await fileUploadSecret(store, systemRandom),
      baseUrl: advertisedUrl,
      fileBytesMax: checkFileBytesMax(options.fileBytesMax ?? FILE_BYTES_MAX),
      uploadDurationMsMax,
      clock,
      random: systemRandom,
      log,
    });
    runtime.useFiles(files);
    // Chunks of files nobody has any more, deleted by shard 0's writer after a grace (started with the node's other upkeep).
    const fileCollector = new FileCollector({ store, runtime, writesShardZero: () => roles.role(0) === "writing", clock, random: systemRandom, log, uploadDurationMsMax, ...options.fileCollector });
    const httpActions = new HttpActions({
      basePath: httpActionsPath,
      router: () => runtime.app.http,
      backend,
      verifier: options.verifier,
      log,
      clock,
      files: () => runtime.files,
    });
    await options.beforeListen?.();
    const server = await CairnServer.listen(
      {
        handler: sync,
        api,
        files,
        httpActions,
        assets,
        staticFiles,
        cors,
        log,
        clock,
        ...(options.pingIntervalMs !== undefined ? { pingIntervalMs: options.pingIntervalMs } : {}),
        ...(options.sessionsMax !== undefined ? { sessionsMax: options.sessionsMax } : {}),
      },
      { port: options.port, host: options.host },
    );
    late.serverUrl = server.url;
    shutdown.add("server", () => server.stop());
    const node = new CairnNode(options, parts, server, shutdown);
    late.node = node;
    roles.onChange((change) => node.roleChanged(change));

    try {
      for (const shard of ownShards) {
        await acquireWaitingOutDeadLease(roles, engines[shard]!, clock, log, maxClockSkewMs);
        startupAcquires.delete(shard);
      }
    } finally {
      startupAcquires.clear();
    }
    if (roles.writesAny()) await node.backfill();
    node.started = true;
    for (const tailer of tailers) tailer.start();
    tailersStarted = true;
    node.watchIndexStates();
    // Scheduled jobs and crons run on the shards this node writes, from now until it stops (it stops first).
    const jobs = new JobRunner({
      runtime,
      backend,
      shards: engines.length,
      writes: (shard) => roles.role(shard) === "writing",
      clock,
      log,
      actionOverMs: ACTION_RUN_MS_MAX + maxClockSkewMs,
    });
    parts.jobs = jobs;
    jobs.start();
    shutdown.add("scheduled jobs", () => jobs.stop());
    fileCollector.start();
    shutdown.add("file collector", () => fileCollector.stop());
    metrics.watchNode(() => ({
      shards: engines.map((engine) => ({ shard: engine.shard, role: roles.role(engine.shard), epoch: engine.manifestCurrent.epoch, frontierTs: engine.closedTs, lastDataTs: engine.lastDataTs })),
      liveNodes: balancer === null ? null : balancer.view.liveNodeIds.length,
    }));
    const frontierWatch = new FrontierWatch({
      clock,
      log,
      ...(options.frontierStallWarnMs !== undefined ? { stallWarnMs: options.frontierStallWarnMs } : {}),
      // A quiet log is polled every idlePollMs: only a tail incomplete for longer than two polls lags.
      tailWarnMs: Math.max(options.frontierStallWarnMs ?? FRONTIER_STALL_WARN_MS, 2 * tailers[0]!.tuning.idlePollMs),
      shards: () =>
        engines.map((engine, shard) => {
          const status = tailers[shard]!.status();
          return {
            shard,
            frontierTs: engine.closedTs,
            lastDataTs: engine.lastDataTs,
            writer: engine.manifestCurrent.writer?.nodeId ?? null,
            writerLive: isLeaseLive(engine.manifestCurrent, clock.nowMs()),
            writing: engine.state.kind === "writing",
            stalenessMs: status.stalenessMs,
            lastError: status.lastError === null ? null : `[${status.lastError.code}] ${status.lastError.message}`,
          };
        }),
    });
    frontierWatch.start();
    shutdown.add("frontier watch", () => frontierWatch.stop());

    layoutWatcher = new LayoutWatcher({
      store,
      random: systemRandom,
      clock,
      generation: sharded.generation,
      ...(options.layoutCheckIntervalMs !== undefined ? { intervalMs: options.layoutCheckIntervalMs } : {}),
      onRetired: (why) => node.retire(why),
      onError: throttledLog(log, clock, "layout watch"),
    });
    layoutWatcher.start();
    node.layoutWatcher = layoutWatcher;
    const stoppedLayoutWatcher = layoutWatcher;
    shutdown.add("layout watch", () => stoppedLayoutWatcher.stop());

    // Every node tells the writers of the shards it follows that it reads their frontier.
    await discovery.start(engines.map((engine) => engine.manifestCurrent.writer).filter((writer) => writer !== null && writer.nodeId !== nodeId && writer.url !== null).map((writer) => writer!.url!));
    shutdown.add("peer discovery", () => discovery.stop());

    // Last, so that it stops first: no takeover while the node drains. A fleet node's
    // balancer takes over lapsed shards instead (the ones the live set gives it).
    if (takeover && balancer === null) {
      const watchers = engines.map(
        (engine) =>
          new LeaseWatcher({
            engine: { shard: engine.shard, get state() { return engine.state; }, refreshManifest: () => engine.refreshManifest(), acquire: () => roles.acquire(engine.shard) },
            nodeId,
            clock,
            maxClockSkewMs,
            ...(options.leaseCheckIntervalMs !== undefined ? { checkIntervalMs: options.leaseCheckIntervalMs } : {}),
            onAcquired: () => log(`shard ${engine.shard}: took over as the writer (epoch ${engine.manifestCurrent.epoch})`),
            onError: throttledLog(log, clock, `shard ${engine.shard}: lease watch`),
          }),
      );
      for (const watcher of watchers) watcher.start();
      shutdown.add("lease watch", () => Promise.all(watchers.map((watcher) => watcher.stop())).then(() => undefined));
    }
    return node;
  }

  private layoutWatcher: LayoutWatcher | null = null;

  /** What the node does about its engines' events besides the role machine: wake hints, the writers it learns of. */
  private engineEvent(event: EngineEvent): void {
    const { hints, forwarders, discovery } = this.parts;
    switch (event.type) {
      case "created":
        // A segment small enough travels in its verified hint, and followers do not GET it:
        // announcing it early would only make them start that GET.
        if (event.bytes > HINT_SEGMENT_BYTES_MAX) hints?.hint({ shard: event.shard, seqno: event.seqno, verifying: true });
        return;
      case "flushed":
        hints?.hint({ shard: event.shard, seqno: event.seqno, hash: event.hash, ...(event.bytes <= HINT_SEGMENT_BYTES_MAX ? { segment: event.content } : {}) });
        return;
      case "acquired":
        hints?.hint({ shard: event.shard, seqno: event.fenceSeqno, hash: event.fenceHash });
        return;
      case "writer-changed":
        // A reshard takes every old shard's lease (a new writer): watch for its switch.
        this.layoutWatcher?.check();
        // Forwards to the writer that lost the shard are re-routed to the new one, which
        // learns at once that this node reads its frontier.
        forwarders[event.shard]?.writerChanged(event.writer);
        discovery.writerChanged(event.writer);
        return;
      default:
        return;
    }
  }

  /** Every part that depends on a shard's role follows it here. */
  private roleChanged(change: RoleChange): void {
    const { forwarders, tailers, discovery, sharded } = this.parts;
    this.parts.jobs?.rolesChanged();
    const { log, nodeId } = this.options;
    switch (change.to) {
      case "writing": {
        // What this node still forwards for the shard runs here now.
        forwarders[change.shard]?.writerChanged({ nodeId, url: this.options.advertiseUrl ?? this.url });
        // A new writer of a shard others follow: find them now (hints, frontier ticks), not at the next renewal.
        discovery.listNow();
        // A writer needs no watermark of its own (its GC would wait for it).
        const engine = sharded.engines[change.shard]!;
        void (tailers[change.shard]?.removeWatermark() ?? engine.watermarkStore.remove(nodeId)).catch(() => undefined);
        // Indexes still backfilling get this shard's entries (each shard's writer does its own).
        if (this.started) void this.backfill().catch((error: unknown) => log(`index backfill failed: ${(error as Error).message}`));
        return;
      }
      case "fenced":
        // A reshard fences a writer whose lease lapsed (paused past it) as it takes the old shards.
        this.layoutWatcher?.check();
        log(`shard ${change.shard}: ${change.reason}; no longer writing it: serving it as a ${this.parts.takeover ? "standby" : "replica"}, tailing the log and forwarding writes`);
        tailers[change.shard]?.wake();
        return;
      default:
        return;
    }
  }

  /** A reshard retired the layout: nothing of it is served from now on. */
  private retire(why: LayoutRetired): void {
    this.retired = why;
    this.options.log(`${why.reason}: this node stops serving it (calls fail with DEPLOYMENT_RESHARDED; health says "stopped")`);
    for (const tailer of this.parts.tailers) void tailer.stop();
    void this.parts.sync.close(0);
    this.options.onLayoutRetired?.(why);
  }

  /** The backfill running, and whether another was asked for meanwhile (a shard acquired during it). */
  private backfillRun: Promise<void> | null = null;
  private backfillAgain = false;

  /** Backfills the shards this node writes of every index still backfilling (one run at a time). */
  private backfill(): Promise<void> {
    if (this.backfillRun !== null) {
      this.backfillAgain = true;
      return this.backfillRun;
    }
    this.backfillRun = (async () => {
      try {
        do {
          this.backfillAgain = false;
          await this.backfillOnce();
        } while (this.backfillAgain);
      } finally {
        this.backfillRun = null;
      }
    })();
    return this.backfillRun;
  }

  private async backfillOnce(): Promise<void> {
    const { catalog, sharded, store, roles } = this.parts;
    const { log } = this.options;
    const own = sharded.engines.filter((engine) => roles.role(engine.shard) === "writing").map((engine) => engine.shard);
    if (own.length === 0) return;
    // Tables and indexes the schema dropped: this node's shards' part deleted, in the log.
    let lastLoggedMs = Number.NEGATIVE_INFINITY;
    const dropped = await dropRemoved({
      shards: sharded.engines,
      own,
      store,
      random: systemRandom,
      onProgress: (progress) => {
        const nowMs = this.parts.clock.monotonicMs();
        if (nowMs - lastLoggedMs < 5_000) return;
        lastLoggedMs = nowMs;
        log(`dropping ${progress.what}: ${progress.rows} row(s) deleted`);
      },
    });
    for (const what of dropped) log(`${what} is dropped`);
    if (!backfilling(catalog)) return;
    const backfilled = await backfillIndexes({
      catalog,
      shards: sharded.engines,
      own,
      store,
      random: systemRandom,
      onProgress: (progress) => log(`backfilling index ${progress.table}.${progress.index}: ${progress.documents} document(s)`),
    });
    for (const index of backfilled) log(`index ${index.table}.${index.index} is ready (${index.documents} document(s) indexed here)`);
  }

  /**
   * While an index is backfilling, the stored catalog is re-read on a cadence: the shards
   * other nodes write are backfilled there, and this node learns that the index is ready
   * (queries on it stop answering INDEX_NOT_READY) without a restart.
   */
  private watchIndexStates(): void {
    const { store, clock } = this.parts;
    if (this.watchingIndexStates || !backfilling(this.parts.catalog)) return;
    this.watchingIndexStates = true;
    const stop = new AbortController();
    // The catalog is read from parts each time: a reload (reloadApp) replaces it.
    const loop = repeatEvery(clock, CATALOG_REFRESH_MS, stop.signal, async () => {
      try {
        for (const name of await refreshIndexStates(store, systemRandom, this.parts.catalog)) this.options.log(`index ${name} is ready (backfilled by the shards' writers)`);
      } catch (error) {
        this.options.log(`reading the schema catalog failed: ${(error as Error).message}`);
      }
      if (!backfilling(this.parts.catalog)) {
        this.watchingIndexStates = false;
        stop.abort();
      }
    });
    this.shutdown.add("index state watch", async () => {
      stop.abort();
      await loop;
    });
  }


  private health() {
    const { sharded, tailers, roles, sync } = this.parts;
    return nodeHealth({
      nodeId: this.options.nodeId,
      deploymentId: sharded.deploymentId,
      clock: this.parts.clock,
      engines: sharded.engines,
      tailers,
      roles: roles.roles(),
      nodeRole: this.role(),
      frontierTs: sync.currentTs,
      sessions: sync.sessionCount,
      retired: this.retired,
      fleet: this.parts.balancer?.view ?? null,
    });
  }
}

/** The parts of a node that live as long as it does. */
interface NodeParts {
  readonly sharded: ShardedStore;
  /** Replaced when the app is reloaded (reloadApp). */
  catalog: Catalog;
  readonly store: ObjectStore;
  readonly runtime: FunctionRuntime;
  readonly roles: ShardRoles;
  readonly forwarders: readonly WriteForwarder[];
  readonly tailers: readonly ShardTailer[];
  readonly sync: SyncHandler;
  readonly discovery: PeerDiscovery;
  /** A fleet node's balancer (null for the other roles). */
  readonly balancer: FleetBalancer | null;
  readonly hints: WakeHintSender | null;
  /** Whether this node takes over shards whose lease lapsed (a writer or standby). */
  readonly takeover: boolean;
  readonly clock: Clock;
  readonly maxClockSkewMs: number;
  /** Runs scheduled jobs and crons on the shards this node writes (set once the node has started). */
  jobs?: JobRunner;
}

/**
 * A follower serves what its local copy has at once if the bucket cannot give more: the
 * error shows in /api/health as staleness and lastError, and the tailer keeps trying.
 */
async function catchUpServingWhatIsThere(engines: readonly ShardEngine[], log: (line: string) => void): Promise<void> {
  for (const engine of engines) {
    try {
      const report = await engine.catchUpToTail();
      log(`shard ${engine.shard}: caught up through seqno ${engine.position.nextSeqno - 1}${report.restoredFromSeqno !== null ? ` (restored the snapshot at ${report.restoredFromSeqno})` : ""}`);
    } catch (error) {
      log(`shard ${engine.shard}: cannot catch up (${(error as Error).message}); serving the local copy through seqno ${engine.position.nextSeqno - 1}, and retrying`);
    }
  }
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

/** Times every mutation from call to durable answer (the commit latency clients see, minus the network). */
function meteredBackend(backend: SyncBackend, metrics: ServerMetrics, history: MetricsHistory, clock: Clock): SyncBackend {
  return {
    deploymentId: backend.deploymentId,
    get readTs() {
      return backend.readTs;
    },
    runQuery: (path, args, options) => backend.runQuery(path, args, options),
    runMutation: async (path, args, options) => {
      const startedMs = clock.monotonicMs();
      const run = await backend.runMutation(path, args, options);
      if (!run.replayed) {
        const durationMs = clock.monotonicMs() - startedMs;
        metrics.mutationFinished(durationMs);
        history.mutationFinished(durationMs);
      }
      return run;
    },
    runAction: (path, args, options) => backend.runAction(path, args, options),
    receipt: (clientId, seq, identity) => backend.receipt(clientId, seq, identity),
  };
}

/**
 * Acquires `engine`'s shard through the role machine. A lease another node holds is
 * waited out once (plus the clock skew the deployment tolerates): a writer that crashed
 * leaves one behind that lapses by itself. If it was renewed meanwhile, its writer is
 * alive and this node refuses to start (LEASE_HELD) instead of waiting forever — start it
 * with --standby to wait.
 */
async function acquireWaitingOutDeadLease(roles: ShardRoles, engine: ShardEngine, clock: Clock, log: (line: string) => void, maxClockSkewMs: number): Promise<void> {
  let waitedFor: number | null = null;
  for (;;) {
    try {
      await roles.acquire(engine.shard);
      return;
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

function checkFileBytesMax(bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new CairnError("INVALID_ARGUMENT", `the file size limit must be a positive whole number of bytes, not ${String(bytes)}`);
  return bytes;
}
