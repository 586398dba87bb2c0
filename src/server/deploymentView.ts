import { assert } from "../base/index.js";
import type { NodeEntry } from "../fleet/index.js";
import { describeTables, type Catalog, type TableDescription } from "../functions/index.js";
import type { Manifest } from "../manifest/index.js";
import type { SyncStats } from "../sync/index.js";
import type { ShardFollowers } from "./followerWatermarks.js";
import type { MaintenanceLog } from "./MaintenanceLog.js";
import type { nodeHealth } from "./nodeHealth.js";
import { requestsCostPerHour, type RequestsCost, type StoreRequestCounts } from "./storeCost.js";

/**
 * The dashboard's Deployment view (`GET /api/admin/deployment`, docs/admin-api.md
 * `Deployment`), assembled from plain values the node already has: a pure function, so
 * its shape is tested without a node.
 *
 * - Times are ms since the epoch throughout (`leaseExpiresAt` too, unlike /api/health's
 *   ISO string); null where unknown.
 * - A shard's `nextSeqno` is the next slot of its log as far as this node knows: its own
 *   copy's position, or past the manifest's `tailHint` when that is further (on the
 *   shard's writer, the log's real end). `lagSegments` = nextSeqno − 1 − the follower's
 *   appliedSeqno, never negative (a follower ahead of this node's copy lags 0).
 */
export type NodeHealth = ReturnType<typeof nodeHealth>;

export interface ShardLog {
  /** The shard's manifest as this node last read it (ShardEngine.manifestCurrent). */
  readonly manifest: Manifest;
  /** ShardEngine.position.nextSeqno: the next slot this node's copy would apply. */
  readonly nextSeqno: number;
}

export interface DeploymentParts {
  readonly health: NodeHealth;
  /** Where this node answers (its advertised URL), or null. */
  readonly url: string | null;
  /** When this node last renewed its registry entry and until when it holds (nulls when unknown). */
  readonly presence: { readonly updatedAt: number | null; readonly expiresAt: number | null };
  /** The other live nodes (PeerDiscovery.others). */
  readonly others: readonly NodeEntry[];
  readonly logs: readonly ShardLog[];
  readonly followers: readonly ShardFollowers[];
  readonly maintenance: Pick<MaintenanceLog, "of">;
  readonly store: StoreRequestCounts;
  /** The schema catalog the node serves (it is replaced when the app is reloaded: pass the current one). */
  readonly catalog: Catalog;
  readonly sync: Pick<SyncStats, "sessions" | "subscriptions">;
}

export interface DeploymentNode {
  readonly nodeId: string;
  readonly role: string;
  readonly url: string | null;
  /** The shards it writes, as its entry says (null: an entry that does not say). */
  readonly writes: readonly number[] | null;
  readonly updatedAt: number | null;
  readonly expiresAt: number | null;
  readonly self: boolean;
}

export interface DeploymentFollower {
  readonly consumerId: string;
  readonly appliedSeqno: number;
  readonly lagSegments: number;
  readonly updatedAt: number;
}

export interface DeploymentShard {
  readonly shard: number;
  readonly role: string;
  readonly writer: string | null;
  readonly epoch: number;
  readonly leaseExpiresAt: number | null;
  readonly writerLive: boolean;
  readonly appliedSeqno: number;
  readonly frontierTs: number;
  readonly stalenessMs: number | null;
  readonly lastError: { readonly code: string; readonly message: string } | null;
  readonly logStart: number;
  readonly nextSeqno: number;
  readonly snapshot: { readonly seqno: number; readonly maxTs: number } | null;
  readonly followers: readonly DeploymentFollower[];
  readonly lastSnapshot: { readonly time: number; readonly seqno: number } | null;
  readonly lastGc: { readonly time: number; readonly segmentsDeleted: number; readonly logStartAfter: number; readonly heldBackBy: number | null } | null;
}

export interface Deployment {
  readonly node: { readonly nodeId: string; readonly role: string; readonly url: string | null; readonly deploymentId: string; readonly status: string };
  readonly nodes: readonly DeploymentNode[];
  readonly frontier: { readonly ts: number; readonly heldBy: NodeHealth["frontierHeldBy"] };
  readonly shards: readonly DeploymentShard[];
  /** `windowMs`: the span the counts cover (an hour, or less on a young node); not in the contract's sketch. */
  readonly store: { readonly requestsLastHour: Readonly<Record<string, number>>; readonly windowMs: number; readonly costPerHour: RequestsCost };
  /** The tables as `GET /api/admin/tables` lists them (describeTables), without `documents`. */
  readonly schema: { readonly tables: readonly TableDescription[] };
  readonly sessions: number;
  readonly subscriptions: number;
}

export function deploymentView(parts: DeploymentParts): Deployment {
  const { health } = parts;
  return {
    node: { nodeId: health.nodeId, role: health.role, url: parts.url, deploymentId: health.deploymentId, status: health.status },
    nodes: nodesOf(parts),
    frontier: { ts: health.frontierTs, heldBy: health.frontierHeldBy },
    shards: health.shards.map((shard) => shardView(shard, parts)),
    store: {
      requestsLastHour: parts.store.requestsLastHour,
      windowMs: parts.store.windowMs,
      costPerHour: requestsCostPerHour(parts.store.requestsLastHour, parts.store.windowMs),
    },
    schema: { tables: describeTables(parts.catalog) },
    sessions: parts.sync.sessions,
    subscriptions: parts.sync.subscriptions,
  };
}

/** This node first, then the others by node id (an entry under this node's id is this node's, already listed). */
function nodesOf(parts: DeploymentParts): DeploymentNode[] {
  const { health } = parts;
  const self: DeploymentNode = {
    nodeId: health.nodeId,
    role: health.role,
    url: parts.url,
    writes: health.shards.filter((shard) => shard.role === "writing").map((shard) => shard.shard),
    updatedAt: parts.presence.updatedAt,
    expiresAt: parts.presence.expiresAt,
    self: true,
  };
  const others = parts.others
    .filter((entry) => entry.nodeId !== health.nodeId)
    .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0))
    .map((entry): DeploymentNode => ({
      nodeId: entry.nodeId,
      role: entry.role,
      url: entry.url,
      writes: entry.writes ?? null,
      updatedAt: entry.updatedAt,
      expiresAt: entry.expiresAt,
      self: false,
    }));
  return [self, ...others];
}

function shardView(shard: NodeHealth["shards"][number], parts: DeploymentParts): DeploymentShard {
  const log = parts.logs.find((candidate) => candidate.manifest.shard === shard.shard);
  assert(log !== undefined, `deploymentView: no manifest given for shard ${shard.shard}`);
  const { manifest } = log;
  const nextSeqno = Math.max(log.nextSeqno, manifest.tailHint + 1);
  const lastSeqno = nextSeqno - 1;
  const watermarks = parts.followers.find((candidate) => candidate.shard === shard.shard)?.followers ?? [];
  const maintenance = parts.maintenance.of(shard.shard);
  return {
    shard: shard.shard,
    role: shard.role,
    writer: manifest.writer?.nodeId ?? null,
    epoch: manifest.epoch,
    leaseExpiresAt: manifest.writer === null ? null : manifest.leaseExpiresAt,
    writerLive: shard.writerLive,
    appliedSeqno: shard.appliedSeqno,
    frontierTs: shard.frontierTs,
    stalenessMs: shard.stalenessMs,
    lastError: shard.lastError,
    logStart: manifest.logStart,
    nextSeqno,
    snapshot: manifest.snapshot === null ? null : { seqno: manifest.snapshot.seqno, maxTs: manifest.snapshot.ts },
    followers: watermarks.map((watermark) => ({
      consumerId: watermark.consumerId,
      appliedSeqno: watermark.appliedSeqno,
      lagSegments: Math.max(0, lastSeqno - watermark.appliedSeqno),
      updatedAt: watermark.updatedAt,
    })),
    lastSnapshot: maintenance.lastSnapshot,
    lastGc: maintenance.lastGc,
  };
}
