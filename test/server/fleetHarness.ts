/**
 * What the fleet's multi-process tests share: fleet nodes as real processes over one store
 * (a directory, or the S3 test endpoint reached by URL), their health read over HTTP, and
 * a walk of every shard's log in the bucket that collects the receipts a checker counts.
 * Every process and endpoint a test starts is registered here and stopped by
 * `stopEverything` (call it in afterEach).
 */
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { Random } from "../../src/client/Random.js";
import { bucketLayout, ShardManifest } from "../../src/manifest/index.js";
import { type ObjectStore, openObjectStore } from "../../src/objectstore/index.js";
import { LOG_START, LogValidator, readLog } from "../../src/segments/index.js";
import { systemRandom } from "../../src/base/index.js";
import type { NodeProcessConfig } from "../support/nodeProcess.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import { within as measuredWait } from "../support/within.js";
import { spawnServing } from "../support/spawnCairnServe.js";

export const ADMIN_KEY = "fleet-test-admin-key";
/** Short leases and fast beats (as test/server/fleet.test.ts): ownership moves within a few seconds. */
export const FAST = { engineTuning: { leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 }, fleet: { beatMs: 250, presenceTtlMs: 1_500 }, maxClockSkewMs: 200 } as const;
/** A bound on a hang, not a timing assertion (the times seen are printed). */
/** Generous: under the whole suite, node processes share two cores with another test file. */
export const WAIT_MS_MAX = 90_000;

const children: ChildProcess[] = [];
const started: FleetNode[] = [];
const clients: CairnClient[] = [];
const closers: (() => Promise<void>)[] = [];

/** Stops every client, node process and endpoint a test started. */
export async function stopEverything(): Promise<void> {
  for (const client of clients.splice(0)) client.close();
  // For a failure's post-mortem: CAIRN_FLEET_TEST_LOGS=<dir> keeps every node's output there.
  const logs = process.env["CAIRN_FLEET_TEST_LOGS"];
  for (const [index, node] of started.splice(0).entries()) if (logs !== undefined) writeFileSync(join(logs, `${Date.now()}-${index}-${node.nodeId}.log`), node.output);
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("close", resolve));
    }),
  );
  for (const close of closers.splice(0).reverse()) await close();
}

/** Where a fleet keeps its bucket: the URL its nodes open, the environment they need, and the store for the test itself. */
export interface FleetStore {
  readonly name: string;
  readonly url: string;
  readonly env: Record<string, string>;
  /** The bucket opened in the test process (to walk the logs); closed by stopEverything. */
  open(): Promise<ObjectStore>;
}

export function directoryStore(directory: string): FleetStore {
  return {
    name: "a directory",
    url: directory,
    env: {},
    open: async () => {
      const store = await openObjectStore(directory);
      closers.push(() => store.close());
      return store;
    },
  };
}

let endpoints = 0;
/** A fresh S3 test endpoint on a loopback port in this process, reached by the nodes through an s3:// URL (the real AWS SDK). */
export async function s3EndpointStore(): Promise<FleetStore> {
  const endpoint: S3Endpoint = await startS3Endpoint();
  closers.push(() => endpoint.close());
  const url = `s3://${endpoint.bucket}/fleet${endpoints++}/?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
  return {
    name: "the S3 test endpoint",
    url,
    env: { AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey },
    open: async () => {
      const store = await openObjectStore(url, { s3: { credentials: endpoint.credentials } });
      closers.push(() => store.close());
      return store;
    },
  };
}

/** A fleet node in a process of its own; its output is kept. */
export class FleetNode {
  output: string;
  private readonly closed: Promise<void>;

  constructor(
    readonly nodeId: string,
    readonly url: string,
    readonly child: ChildProcess,
    output: string,
  ) {
    this.output = output;
    child.stdout!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.closed = new Promise((resolve) => child.once("close", () => resolve()));
  }

  get syncUrl(): string {
    return `${this.url.replace(/^http/, "ws")}api/sync`;
  }

  /** SIGKILL: no hand-over, no lease release, no entry removed; local files as the crash leaves them. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.closed;
  }

  /** SIGTERM: a graceful stop (hands its shards over, removes its entry). */
  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    await this.closed;
  }

  /** Resolves once the process ended, by itself or not. */
  whenClosed(): Promise<void> {
    return this.closed;
  }
}

export interface FleetNodeSpec {
  readonly nodeId: string;
  readonly store: FleetStore;
  /** The node's local directory. */
  readonly local: string;
  readonly app: string;
  readonly numShards: number;
  readonly extra?: Partial<NodeProcessConfig>;
}

export async function startFleetNode(spec: FleetNodeSpec): Promise<FleetNode> {
  const config: NodeProcessConfig = {
    store: spec.store.url,
    app: spec.app,
    adminKey: ADMIN_KEY,
    local: spec.local,
    nodeId: spec.nodeId,
    numShards: spec.numShards,
    role: "fleet",
    ...FAST,
    ...spec.extra,
  };
  const { child, url, output } = await spawnServing(["test/support/nodeProcess.ts", JSON.stringify(config)], { env: spec.store.env });
  children.push(child);
  const node = new FleetNode(spec.nodeId, url, child, output);
  started.push(node);
  return node;
}

/** A node's local directory under `root`. */
export function localOf(root: string, bucket: string, nodeId: string): string {
  return join(root, `${bucket}-local-${nodeId}`);
}

/**
 * A client of every node's sync URL that connects to `home` first (the others only when
 * it fails): several of them spread over the nodes deterministically.
 */
export function fleetClient(nodes: readonly FleetNode[], home: number): CairnClient {
  const urls = nodes.map((_, index) => nodes[(home + index) % nodes.length]!.syncUrl);
  let first = true;
  const random: Random = {
    bytes: (length) => globalThis.crypto.getRandomValues(new Uint8Array(length)),
    // The first draw picks the first URL (NodeUrls): the home node. Later ones are jitter.
    float: () => (first ? ((first = false), 0) : Math.random()),
  };
  const made = createNodeClient(urls, { random, reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
  clients.push(made);
  return made;
}

/** A measured wait (printed, never asserted), bounded by WAIT_MS_MAX against a hang. */
export function within(what: string, predicate: () => boolean | Promise<boolean>, startedMs = Date.now()): Promise<number> {
  return measuredWait("fleet", what, predicate, { startedMs, maxMs: WAIT_MS_MAX });
}

export interface ShardHealth {
  readonly shard: number;
  readonly writer: string | null;
  readonly epoch: number;
  readonly state: string;
  readonly role: string;
  readonly appliedSeqno: number;
  readonly target?: string | null;
}

export interface Health {
  readonly deploymentId: string;
  readonly nodeId: string;
  readonly shards: readonly ShardHealth[];
  readonly fleet?: { readonly liveNodes: readonly string[]; readonly beats: number };
}

export async function health(node: FleetNode): Promise<Health> {
  return (await (await fetch(`${node.url}api/health`)).json()) as Health;
}

/** Each shard's writer as every node sees it, once all of them agree and the writer says it writes it; else null. */
export async function agreedWriters(nodes: readonly FleetNode[]): Promise<(string | null)[] | null> {
  const views = await Promise.all(nodes.map((node) => health(node)));
  const writers = views[0]!.shards.map((shard) => shard.writer);
  for (const [index, view] of views.entries()) {
    if (JSON.stringify(view.shards.map((shard) => shard.writer)) !== JSON.stringify(writers)) return null;
    for (const state of view.shards) if ((state.writer === nodes[index]!.nodeId) !== (state.state === "writing")) return null;
  }
  return writers;
}

export async function converged(nodes: readonly FleetNode[], expected: readonly (string | null)[]): Promise<boolean> {
  return JSON.stringify(await agreedWriters(nodes)) === JSON.stringify(expected);
}

/** A query over HTTP; a node that does not answer within 5 s (frozen, say) is an error. */
export async function query<T>(node: FleetNode, path: string, args: unknown = {}): Promise<T> {
  const response = await fetch(`${node.url}api/query`, { method: "POST", body: JSON.stringify({ path, args }), signal: AbortSignal.timeout(5_000) });
  const body = (await response.json()) as { value?: T; error?: unknown };
  if (response.status !== 200) throw new Error(`query ${path} on ${node.nodeId}: ${response.status} ${JSON.stringify(body)}`);
  return body.value as T;
}

/** A receipt as the log holds it. */
export interface LoggedReceipt {
  readonly clientId: string;
  readonly seq: number;
  readonly ts: number;
  readonly result: string;
  readonly seqno: number;
  readonly epoch: number;
}

export interface ShardLog {
  readonly shard: number;
  /** Receipts of the segments a reader applies, in log order. */
  readonly applied: readonly LoggedReceipt[];
  /** Receipts of segments a reader skips (written by a writer fenced meanwhile). */
  readonly skipped: readonly LoggedReceipt[];
  readonly segments: number;
  readonly epochs: readonly number[];
  /** Each data segment's writer, with its epoch (who acknowledged what was in it). */
  readonly writersByEpoch: ReadonlyMap<number, string>;
}

/**
 * Walks each shard's whole log in the bucket as a reader does (LogValidator: segments of
 * an epoch older than one already seen are skipped) and collects the receipts. The
 * tests' logs are short: none has a snapshot, so every segment is still there.
 */
export async function readShardLogs(store: ObjectStore, deploymentId: string, numShards: number): Promise<ShardLog[]> {
  const logs: ShardLog[] = [];
  for (let shard = 0; shard < numShards; shard++) {
    const manifest = await new ShardManifest(store, shard, deploymentId, systemRandom).load();
    if (manifest.snapshot !== null || manifest.logStart > 0) throw new Error(`shard ${shard} has a snapshot (logStart ${manifest.logStart}): the checker needs its whole log`);
    const validator = new LogValidator(shard, LOG_START);
    const applied: LoggedReceipt[] = [];
    const skipped: LoggedReceipt[] = [];
    const epochs = new Set<number>();
    const writersByEpoch = new Map<number, string>();
    let segments = 0;
    for await (const segment of readLog(store, { deploymentId, shard, fromSeqno: 0, concurrency: 8 })) {
      segments++;
      const verdict = validator.accept(segment);
      const { seqno, epoch, writer } = segment.header;
      epochs.add(epoch);
      const previous = writersByEpoch.get(epoch);
      if (previous !== undefined && previous !== writer) throw new Error(`shard ${shard}: epoch ${epoch} has segments of two writers, ${previous} and ${writer} (seqno ${seqno})`);
      writersByEpoch.set(epoch, writer);
      for (const receipt of segment.records.receipts) (verdict === "apply" ? applied : skipped).push({ clientId: receipt.clientId, seq: receipt.seq, ts: receipt.ts, result: receipt.result, seqno, epoch });
    }
    logs.push({ shard, applied, skipped, segments, epochs: [...epochs].sort((a, b) => a - b), writersByEpoch });
  }
  return logs;
}

/** How many segment objects each shard's log holds (LIST), for figures. */
export async function segmentCounts(store: ObjectStore, numShards: number): Promise<number[]> {
  const counts: number[] = [];
  for (let shard = 0; shard < numShards; shard++) {
    let count = 0;
    for await (const listed of store.list(bucketLayout.logPrefix(shard))) if (/\/\d{20}$/.test(listed.key)) count++;
    counts.push(count);
  }
  return counts;
}

/** A counter of a node's /metrics, summed over the label sets that match `labels`. */
export async function metric(node: FleetNode, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${node.url}metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    const match = /^(\w+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const set = match[2] ?? "";
    if (Object.entries(labels).every(([key, value]) => set.includes(`${key}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}
