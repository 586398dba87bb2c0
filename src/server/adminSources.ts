import { describeFunctions, describeTables, decodeDocument, laneOfId, type FunctionRuntime } from "../functions/index.js";
import { encodeValue, indexRange } from "../model/index.js";
import { liveNodes, type NodeEntry, type PeerDiscovery } from "../fleet/index.js";
import type { Clock, Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { ShardedStore } from "../shard/index.js";
import type { LogRing, SyncHandler } from "../sync/index.js";
import type { AdminSources } from "./AdminApi.js";
import { deploymentView, type NodeHealth } from "./deploymentView.js";
import type { FollowerWatermarksReader } from "./followerWatermarks.js";
import type { LoginCodes } from "./LoginCodes.js";
import type { MaintenanceLog } from "./MaintenanceLog.js";
import type { MetricsHistory } from "./MetricsHistory.js";
import type { StoreRequestWindow } from "./storeCost.js";

/** How often a node that does not list the registry itself reads it for the deployment view. */
const REGISTRY_READ_MS = 30_000;

/** The node's parts the admin API reads. */
export interface AdminParts {
  readonly sharded: ShardedStore;
  readonly runtime: FunctionRuntime;
  readonly sync: SyncHandler;
  readonly discovery: PeerDiscovery;
  readonly logs: LogRing;
  readonly metrics: MetricsHistory;
  readonly maintenance: MaintenanceLog;
  readonly followers: FollowerWatermarksReader;
  readonly storeRequests: StoreRequestWindow;
  readonly health: () => NodeHealth;
  readonly url: () => string | null;
  readonly adminKey: string | null;
  readonly loginCodes: LoginCodes | null;
  /** Where the app's HTTP actions are served (HttpActions). */
  readonly httpActionsPath: string;
  readonly store: ObjectStore;
  readonly clock: Clock;
  readonly random: Random;
}

/**
 * The admin API's answers (docs/admin-api.md) from a node's parts: what the local copies
 * hold at the node's read ts, the app's functions, the node's logs and metrics, and the
 * deployment as this node sees it (its manifests, the registry, the followers'
 * watermarks — read from the bucket at most every 30 s).
 */
export function adminSources(parts: AdminParts): AdminSources {
  const { sharded, runtime } = parts;
  // Only fleet nodes and writers that hint list the registry on their own; the others'
  // view of the nodes is read here, at most every REGISTRY_READ_MS.
  let registry: { readonly atMs: number; readonly nodes: Promise<readonly NodeEntry[]> } | null = null;
  const registered = async (): Promise<readonly NodeEntry[]> => {
    if (parts.discovery.others.length > 0) return parts.discovery.others;
    const nowMs = parts.clock.monotonicMs();
    if (registry === null || nowMs - registry.atMs >= REGISTRY_READ_MS) {
      const nodes = liveNodes(parts.store, sharded.deploymentId, parts.random, parts.clock.nowMs()).catch(() => [] as NodeEntry[]);
      registry = { atMs: nowMs, nodes };
    }
    return registry.nodes;
  };
  return {
    adminKey: parts.adminKey,
    loginCodes: parts.loginCodes,
    tables: () => {
      const readTs = sharded.readTs;
      const counts = new Map<string, number>();
      for (const table of runtime.catalog.tables) {
        const byCreation = table.indexes.get("by_creation")!;
        const range = indexRange(byCreation.id, { equal: [] });
        // Every shard's copy of the table (a sharded table's documents are spread over them).
        counts.set(table.name, sharded.engines.reduce((sum, engine) => sum + engine.local.count(byCreation.id, range, readTs), 0));
      }
      return { readTs, tables: describeTables(runtime.catalog, counts) };
    },
    functions: () => ({ functions: describeFunctions(runtime.app), http: { path: parts.httpActionsPath, routes: runtime.app.http?.routes() ?? [] } }),
    history: (id, limit) => {
      const { table, id: canonical } = runtime.catalog.tableOfId(id);
      const local = sharded.engines[laneOfId(table, canonical, sharded.engines.length)]!.local;
      const revisions = local.revisionsOf(canonical, limit).map((revision) => ({
        ts: revision.ts,
        value: revision.value === null ? null : encodeValue(decodeDocument(canonical, revision.value)),
      }));
      return { id: canonical, table: table.name, minReadableTs: local.meta().minReadableTs, revisions };
    },
    logs: (query) => parts.logs.query(query),
    deployment: async () => {
      // The bucket's reads first: health and manifests are then as fresh as they can be.
      const followers = await parts.followers.read();
      const others = await registered();
      return deploymentView({
        health: parts.health(),
        url: parts.url(),
        presence: { updatedAt: null, expiresAt: null },
        others,
        logs: sharded.engines.map((engine) => ({ manifest: engine.manifestCurrent, nextSeqno: engine.position.nextSeqno })),
        followers,
        maintenance: parts.maintenance,
        store: parts.storeRequests.lastHour(),
        catalog: runtime.catalog,
        sync: parts.sync.stats(),
      });
    },
    metrics: () => ({ intervalMs: parts.metrics.intervalMs, points: parts.metrics.points() }),
  };
}
