/**
 * The admin API's answers, as docs/admin-api.md describes them. The page reads them
 * defensively (a node of another version may leave a field out): every view tolerates a
 * missing optional part and shows what it has.
 */

/** A value in Cairn's JSON encoding (`{"$integer": …}`, `{"$bytes": …}`, `{"$float": …}` for the special ones). */
export type WireValue = null | boolean | number | string | WireValue[] | { [field: string]: WireValue };

export interface IndexInfo {
  readonly name: string;
  readonly fields: readonly string[];
  readonly state: "ready" | "backfilling";
  readonly system: boolean;
}

export interface TableInfo {
  readonly name: string;
  readonly number: number;
  readonly shardKey: string | null;
  readonly documents?: number;
  readonly indexes: readonly IndexInfo[];
}

export interface TablesAnswer {
  readonly readTs: number;
  readonly tables: readonly TableInfo[];
}

export type FunctionKind = "query" | "mutation" | "action";

export interface FunctionInfo {
  readonly path: string;
  readonly kind: FunctionKind;
  readonly visibility: "public" | "internal";
  readonly args: unknown;
  readonly returns: unknown;
}

export interface HistoryAnswer {
  readonly id: string;
  readonly table: string;
  readonly minReadableTs: number;
  readonly revisions: readonly { readonly ts: number; readonly value: WireValue | null }[];
}

export interface CallStats {
  readonly durationMs: number;
  readonly readRanges?: number;
  readonly writeRanges?: number;
}

export interface CallAnswer {
  readonly value: WireValue;
  readonly ts?: number;
  readonly stats?: CallStats;
}

export type LogLevel = "info" | "warn" | "error";
export const LOG_LEVELS: readonly LogLevel[] = ["info", "warn", "error"];

export interface LogLine {
  readonly level: "log" | "info" | "warn" | "error" | "debug";
  readonly text: string;
  readonly time: number;
}

export interface LogEntry {
  readonly id: number;
  readonly time: number;
  readonly requestId: string;
  readonly path: string;
  readonly kind: FunctionKind;
  readonly level: LogLevel;
  readonly outcome: "ok" | "error";
  readonly durationMs: number;
  readonly error?: { readonly code: string; readonly message: string; readonly stack?: string };
  readonly lines: readonly LogLine[];
  readonly truncatedLines?: number;
}

export interface LogsAnswer {
  readonly entries: readonly LogEntry[];
  readonly dropped: number;
}

export interface MetricsPoint {
  readonly time: number;
  readonly commitsPerSec: number;
  readonly mutationP50Ms: number | null;
  readonly mutationP99Ms: number | null;
  readonly transitionsPerSec: number;
  readonly storeRequestsPerSec: number;
}

export interface MetricsAnswer {
  readonly intervalMs: number;
  readonly points: readonly MetricsPoint[];
}

export interface NodeSummary {
  readonly nodeId: string;
  readonly role: string;
  readonly url: string;
  readonly deploymentId: string;
  readonly status: string;
}

export interface FleetNode {
  readonly nodeId: string;
  readonly role: string;
  readonly url: string;
  readonly writes: readonly number[] | null;
  readonly updatedAt: number;
  readonly expiresAt: number;
  readonly self: boolean;
}

export interface FollowerInfo {
  readonly consumerId: string;
  readonly appliedSeqno: number;
  readonly lagSegments: number;
  readonly updatedAt: number;
}

export interface ShardInfo {
  readonly shard: number;
  readonly role: string;
  readonly writer: string | null;
  readonly epoch: number;
  readonly leaseExpiresAt: number | null;
  readonly writerLive: boolean;
  readonly appliedSeqno: number;
  readonly frontierTs: number;
  readonly stalenessMs: number | null;
  readonly lastError: string | null;
  readonly logStart: number;
  readonly nextSeqno: number;
  readonly snapshot: { readonly seqno: number; readonly maxTs: number } | null;
  readonly followers?: readonly FollowerInfo[];
  readonly lastSnapshot: { readonly time: number; readonly seqno: number } | null;
  readonly lastGc: { readonly time: number; readonly segmentsDeleted: number; readonly logStartAfter: number; readonly heldBackBy: unknown } | null;
}

export interface Deployment {
  readonly node: NodeSummary;
  readonly nodes?: readonly FleetNode[];
  readonly frontier?: {
    readonly ts: number;
    readonly heldBy: { readonly shard: number; readonly heldBackMs: number; readonly writer: string | null; readonly writerLive: boolean } | null;
  };
  readonly shards?: readonly ShardInfo[];
  readonly store?: {
    readonly requestsLastHour: Readonly<Record<string, number>>;
    readonly costPerHour: { readonly requestsUsd: number; readonly prices: Readonly<Record<string, number>> };
  };
  readonly schema?: { readonly tables: readonly TableInfo[] };
  readonly sessions?: unknown;
  readonly subscriptions?: unknown;
}
