/**
 * Scenarios: real `cairn serve` processes — a writer, replicas, a standby — over one
 * store (a directory, and the S3 test endpoint through the real AWS SDK), with the real
 * client library. What a replica must guarantee, tried the way it breaks: a commit on
 * the writer reaches a replica's subscriber; a mutation sent to a replica is applied
 * once and its sender sees it; a lost response between replica and writer does not
 * apply it twice; GC deletes what a frozen replica had not read; the writer is
 * SIGKILLed mid-load and a standby takes over; a replica restarts from its file; a
 * replica meets no deployment, a corrupt segment, and a writer that does not answer.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { openObjectStore } from "../../src/objectstore/index.js";
import { readLog } from "../../src/segments/logReader.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { functions } from "../sync/syncApp.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import { freePort, ServeProcess } from "./serveProcess.js";

const api = apiOf<typeof functions>();
const ADMIN_KEY = "replica-test-admin-key";
/** Short leases so that a takeover takes seconds: 3 s lease, renewed every second. */
const FAST_LEASES = JSON.stringify({ leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 });

const root = mkdtempSync(join(tmpdir(), "cairn-replica-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const processes: ServeProcess[] = [];
const clients: CairnClient[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const process of processes.splice(0)) {
    process.resume();
    await process.kill();
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Deployment {
  readonly name: string;
  /** Arguments naming the store, and the environment a process needs to reach it. */
  readonly storeArgs: readonly string[];
  readonly env: Record<string, string>;
  /** The directory bucket's path (null for S3). */
  readonly bucketDirectory: string | null;
}

let deployments = 0;

async function directoryDeployment(): Promise<Deployment> {
  const bucket = join(root, `bucket-${deployments++}`);
  return { name: "directory", storeArgs: ["--store", bucket], env: {}, bucketDirectory: bucket };
}

let endpoint: S3Endpoint | null = null;
async function s3Deployment(): Promise<Deployment> {
  if (endpoint === null) {
    endpoint = await startS3Endpoint();
    const started = endpoint;
    afterAll(() => started.close());
  }
  const store = `s3://${endpoint.bucket}/d${deployments++}/?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
  return {
    name: "the S3 test endpoint",
    storeArgs: ["--store", store],
    env: { AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey },
    bucketDirectory: null,
  };
}

async function serve(deployment: Deployment, local: string, extra: readonly string[] = [], port = "0"): Promise<ServeProcess> {
  const started = await ServeProcess.start(
    [...deployment.storeArgs, "--local", join(root, local), "--app", "test/sync/syncApp.ts", "--port", port, ...extra],
    { CAIRN_ADMIN_KEY: ADMIN_KEY, ...deployment.env },
  );
  processes.push(started);
  return started;
}

function client(url: string): CairnClient {
  const made = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
  clients.push(made);
  return made;
}

/**
 * Waits until `predicate` holds (polled every 20 ms), failing after `timeoutMs`: a bound on
 * a hang, not a timing assertion. `explain` adds what the failure report should show (the
 * nodes' output), for a failure seen once in a CI-sized run and never alone.
 */
async function eventually(predicate: () => boolean | Promise<boolean>, options: { timeoutMs?: number; explain?: () => string } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString().slice(0, 200)}${options.explain ? `\n${options.explain()}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The latest value a subscription delivered, as a getter. */
function follow<T>(subscribe: (onUpdate: (value: T) => void) => void): () => T | undefined {
  let latest: T | undefined;
  subscribe((value) => (latest = value));
  return () => latest;
}

interface ShardHealth {
  readonly state: string;
  readonly appliedSeqno: number;
  readonly frontierTs: number;
  readonly stalenessMs: number | null;
  readonly lastError: { code: string; message: string } | null;
  readonly writer: string | null;
  readonly epoch: number;
}
interface Health {
  readonly status: string;
  readonly role: string;
  readonly nodeId: string;
  readonly shards: readonly ShardHealth[];
  readonly stalenessMs: number | null;
}

async function deploymentIdOf(node: ServeProcess): Promise<string> {
  return ((await (await fetch(`${node.url}api/health`)).json()) as { deploymentId: string }).deploymentId;
}

async function health(node: ServeProcess): Promise<Health> {
  return (await (await fetch(`${node.url}api/health`)).json()) as Health;
}

async function post(node: ServeProcess, kind: "query" | "mutation", path: string, args: unknown, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${node.url}api/${kind}`, { method: "POST", body: JSON.stringify({ path, args, ...extra }) });
  return { status: response.status, body: await response.json() };
}

async function notes(node: ServeProcess, channel: string): Promise<string[]> {
  const answer = await post(node, "query", "notes:list", { channel });
  expect(answer.status).toBe(200);
  return answer.body.value as string[];
}

/** The seqnos of the segments in a directory bucket's log of shard 0. */
/**
 * Pauses `node` just after one of its manifest writes landed, never inside a
 * compare-and-swap: on the directory store one holds the key's lock file while it runs
 * (past the write itself, until the lock's release), and a process paused holding it
 * blocks every other writer of the manifest — the takeover included — until it resumes
 * (docs/operations.md, Failover). So the pause is checked against the lock files and
 * retried until it holds none (freezeHoldingNoLock).
 */
async function pauseBetweenManifestWrites(node: ServeProcess, bucket: string): Promise<void> {
  const manifest = join(bucket, "s0", "manifest@");
  const before = statSync(manifest).mtimeMs;
  await eventually(() => statSync(manifest).mtimeMs !== before, { timeoutMs: 10_000 });
  // Not inside a compare-and-swap: a frozen holder of the manifest's lock would block the takeover too.
  await node.pauseHoldingNoLock(bucket);
}

function segmentSeqnos(bucket: string): number[] {
  try {
    return readdirSync(join(bucket, "s0", "log"))
      .filter((name) => /^\d{20}@$/.test(name))
      .map((name) => Number(name.slice(0, 20)));
  } catch {
    return [];
  }
}

for (const makeDeployment of [directoryDeployment, s3Deployment]) {
  describe(`a replica over ${makeDeployment === directoryDeployment ? "a directory" : "the S3 test endpoint"}`, () => {
    it("shows a writer's commit to its subscribers, and applies a mutation sent to it once, visible to its sender", async () => {
      const deployment = await makeDeployment();
      const writer = await serve(deployment, `w-${deployments}`);
      const replica = await serve(deployment, `r-${deployments}`, ["--replica"]);
      const onReplica = client(replica.url);
      const seen = follow<string[]>((onUpdate) => onReplica.subscribe(api.notes.list, { channel: "c" }, onUpdate));
      await eventually(() => seen() !== undefined);
      expect(seen()).toEqual([]);

      await client(writer.url).mutation(api.notes.add, { channel: "c", body: "from the writer" });
      await eventually(() => seen()?.length === 1);
      expect(seen()).toEqual(["from the writer"]);

      // The sender's promise resolves only once its own subscription (on the replica) shows the write.
      await onReplica.mutation(api.notes.add, { channel: "c", body: "through the replica" });
      expect(seen()).toEqual(["from the writer", "through the replica"]);
      expect(await notes(writer, "c")).toEqual(["from the writer", "through the replica"]);

      // Over HTTP: the answer comes once the replica itself reads the write.
      const bumped = await post(replica, "mutation", "counters:bump", { name: "n" });
      expect(bumped.status).toBe(200);
      expect((await post(replica, "query", "counters:get", { name: "n" })).body.value).toBe(1);
      const state = await health(replica);
      expect(state).toMatchObject({ status: "ok", role: "replica" });
      expect(state.shards[0]!.frontierTs).toBeGreaterThanOrEqual(bumped.body.ts);
    });

    it("loses no acknowledged write and duplicates none when the writer is SIGKILLed mid-load and a standby takes over", async () => {
      const deployment = await makeDeployment();
      const tuning = ["--engine-tuning", FAST_LEASES];
      const writer = await serve(deployment, `w-${deployments}`, tuning);
      const standby = await serve(deployment, `s-${deployments}`, ["--standby", ...tuning]);
      const replica = await serve(deployment, `r-${deployments}`, ["--replica", ...tuning]);
      const writerId = (await health(writer)).nodeId;

      const acknowledged: string[] = [];
      const failed: string[] = [];
      let running = true;
      const load = (name: string, url: string) =>
        (async () => {
          const connection = client(url);
          for (let i = 0; running; i++) {
            const body = `${name}-${i}`;
            try {
              await connection.mutation(api.notes.add, { channel: "load", body });
              acknowledged.push(body);
            } catch {
              failed.push(body);
              await new Promise((resolve) => setTimeout(resolve, 50));
            }
          }
        })();
      const loads = [load("via-replica-a", replica.url), load("via-replica-b", replica.url), load("via-standby", standby.url)];
      await eventually(() => acknowledged.length >= 15, { timeoutMs: 30_000 });
      await writer.kill();
      const ackedAtKill = acknowledged.length;
      await eventually(async () => (await health(standby)).role === "writer", { timeoutMs: 30_000 });
      await eventually(() => acknowledged.length >= ackedAtKill + 15, { timeoutMs: 30_000 });
      running = false;
      await Promise.all(loads);

      const newWriter = await health(standby);
      expect(newWriter.shards[0]!.writer).toBe(newWriter.nodeId);
      expect(newWriter.shards[0]!.writer).not.toBe(writerId);
      await eventually(async () => (await health(replica)).shards[0]!.epoch === newWriter.shards[0]!.epoch);
      const final = await notes(standby, "load");
      const counts = new Map<string, number>();
      for (const body of final) counts.set(body, (counts.get(body) ?? 0) + 1);
      expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
      expect(acknowledged.filter((body) => !counts.has(body))).toEqual([]);
      // Every write in the log was sent by a load loop (acknowledged, or failed with its outcome unknown).
      expect(final.filter((body) => !acknowledged.includes(body) && !failed.includes(body))).toEqual([]);
      // The replica follows the new epoch to the same state.
      await eventually(async () => (await notes(replica, "load")).length === final.length);
      expect(await notes(replica, "load")).toEqual(final);
    });
  });
}

describe("a replica over a directory bucket, tried where it breaks", () => {
  it("applies a forwarded mutation once when the writer's response to the replica is lost", async () => {
    const deployment = await directoryDeployment();
    // The writer advertises a proxy that passes the first forwarded mutation on and then
    // drops the connection instead of the answer: the replica must retry with the same
    // receipt key and be answered from the receipt.
    const writerPort = await freePort();
    let dropped = 0;
    const proxy = await lossyProxy(writerPort, () => dropped++ === 0);
    cleanups.push(() => new Promise((resolve) => proxy.server.close(() => resolve())));
    const writer = await serve(deployment, "lost-w", ["--advertise-url", proxy.url], String(writerPort));
    const replica = await serve(deployment, "lost-r", ["--replica"]);
    const answer = await post(replica, "mutation", "counters:bump", { name: "once" }, { clientId: "lossy-client", seq: 7 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ value: 1, replayed: true });
    expect(dropped).toBeGreaterThanOrEqual(2);
    expect((await post(writer, "query", "counters:get", { name: "once" })).body.value).toBe(1);
    expect((await post(replica, "query", "counters:get", { name: "once" })).body.value).toBe(1);
  });

  it("demotes a writer paused past its lease to a standby: it never writes again under its epoch, forwards, and keeps its sessions live", async () => {
    const deployment = await directoryDeployment();
    const tuning = ["--engine-tuning", FAST_LEASES];
    const writer = await serve(deployment, "pause-w", tuning);
    const standby = await serve(deployment, "pause-s", ["--standby", ...tuning]);
    const onOldWriter = client(writer.url);
    const seen = follow<string[]>((onUpdate) => onOldWriter.subscribe(api.notes.list, { channel: "p" }, onUpdate));
    await onOldWriter.mutation(api.notes.add, { channel: "p", body: "before the pause" });
    const oldEpoch = (await health(writer)).shards[0]!.epoch;

    await pauseBetweenManifestWrites(writer, deployment.bucketDirectory!);
    await eventually(async () => (await health(standby)).role === "writer", {
      timeoutMs: 30_000,
      explain: () => `the standby printed:\n${standby.output}\nthe paused writer had printed:\n${writer.output}`,
    });
    await client(standby.url).mutation(api.notes.add, { channel: "p", body: "by the new writer" });
    writer.resume();

    // Its lease lapsed while it was paused: it steps down at once on resuming (or its next
    // heartbeat finds the newer epoch first), learns of the newer epoch and follows instead.
    await eventually(
      async () => {
        const shard = (await health(writer)).shards[0]!;
        return shard.state !== "writing" && shard.epoch > oldEpoch;
      },
      { timeoutMs: 30_000 },
    );
    const demoted = await health(writer);
    expect(demoted.role).toBe("standby");
    expect(writer.output).toMatch(/(fenced|poisoned) .*no longer writing it/);
    // Its session sees the new writer's commit through its tail, and its mutations go to the new writer.
    await eventually(() => seen()?.includes("by the new writer") === true);
    await onOldWriter.mutation(api.notes.add, { channel: "p", body: "through the demoted node" });
    expect(await notes(standby, "p")).toEqual(["before the pause", "by the new writer", "through the demoted node"]);
    expect(seen()).toEqual(["before the pause", "by the new writer", "through the demoted node"]);
    // Nothing in the log after the takeover was written under the old epoch.
    const store = await openObjectStore(deployment.bucketDirectory!);
    try {
      const epochs: number[] = [];
      for await (const segment of readLog(store, { deploymentId: await deploymentIdOf(standby), shard: 0, fromSeqno: 0, concurrency: 4 })) epochs.push(segment.header.epoch);
      const fence = epochs.indexOf(oldEpoch + 1);
      expect(fence).toBeGreaterThan(0);
      expect(epochs.slice(fence).every((epoch) => epoch > oldEpoch)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("survives GC deleting segments it had not read: restores the snapshot (or applies what the writer's hints carried) and re-runs its subscriptions", async () => {
    const deployment = await directoryDeployment();
    const bucket = deployment.bucketDirectory!;
    // Snapshot every 5 segments, GC twice a second, a watermark silent for 1 s no longer holds GC back, and no retention window keeps the log.
    const tuning = JSON.stringify({ snapshotEverySegments: 5, maintenanceIntervalMs: 200, gcIntervalMs: 500, consumerTtlMs: 1_000, retentionMs: 0 });
    const writer = await serve(deployment, "gc-w", ["--engine-tuning", tuning]);
    const replica = await serve(deployment, "gc-r", ["--replica"]);
    const onReplica = client(replica.url);
    const seen = follow<string[]>((onUpdate) => onReplica.subscribe(api.notes.list, { channel: "gc" }, onUpdate));
    await eventually(() => seen() !== undefined);
    const position = (await health(replica)).shards[0]!.appliedSeqno;

    replica.pause();
    const writing = client(writer.url);
    for (let i = 0; i < 20; i++) await writing.mutation(api.notes.add, { channel: "gc", body: `n${i}` });
    // GC collected the slot right after the frozen replica's position.
    await eventually(() => !segmentSeqnos(bucket).includes(position + 1), { timeoutMs: 30_000 });
    replica.resume();
    // One more commit: its hint names a segment past the replica's collected slot.
    await writing.mutation(api.notes.add, { channel: "gc", body: "after" });

    await eventually(() => seen()?.length === 21, { timeoutMs: 30_000 });
    expect(seen()).toEqual([...Array.from({ length: 20 }, (_, i) => `n${i}`), "after"]);
    const state = await health(replica);
    expect(state.shards[0]!.lastError).toBeNull();
    // Hints that reached it after the pause may have carried every collected segment's bytes
    // (then nothing was missing); a hint lost to the pause leaves a gap only the snapshot
    // fills. Either way every note is there once, in order (the restore path itself is
    // pinned by ShardTailer's tests and the fleet simulation).
    console.log(`replica after GC: ${/restor/i.test(replica.output) ? "restored the snapshot" : "applied the hinted segments"}`);
  });

  it("resumes from its applied seqno when restarted on its local file", async () => {
    const deployment = await directoryDeployment();
    const writer = await serve(deployment, "restart-w");
    const writing = client(writer.url);
    for (let i = 0; i < 5; i++) await writing.mutation(api.notes.add, { channel: "r", body: `a${i}` });
    const first = await serve(deployment, "restart-r", ["--replica"]);
    await eventually(async () => (await notes(first, "r")).length === 5);
    const applied = (await health(first)).shards[0]!.appliedSeqno;
    expect(await first.stop()).toBe(0);
    processes.splice(processes.indexOf(first), 1);

    for (let i = 0; i < 3; i++) await writing.mutation(api.notes.add, { channel: "r", body: `b${i}` });
    const second = await serve(deployment, "restart-r", ["--replica"]);
    await eventually(async () => (await notes(second, "r")).length === 8);
    // It read on from its file's position (no restore, no replay from the start; a
    // follower this close to the tail prints no per-segment progress).
    expect(second.output).toContain(`local copy through seqno ${applied}`);
    const caughtUp = Number(/shard 0: caught up through seqno (\d+)/.exec(second.output)?.[1]);
    expect(caughtUp).toBeGreaterThanOrEqual(applied + 3);
    expect(second.output).not.toMatch(/restored the snapshot|replaying segment/);
  });

  it("refuses a store with no deployment, with a clear error", async () => {
    const empty = join(root, "no-deployment");
    const spawned = ServeProcess.start(["--store", empty, "--local", join(root, "nd-local"), "--app", "test/sync/syncApp.ts", "--port", "0", "--replica"], { CAIRN_ADMIN_KEY: ADMIN_KEY });
    await expect(spawned).rejects.toThrow(/no Cairn deployment/);
    expect(segmentSeqnos(empty)).toEqual([]);
  });

  it("never applies a corrupt segment: keeps serving what it has and says how stale it is", async () => {
    const deployment = await directoryDeployment();
    const bucket = deployment.bucketDirectory!;
    const writer = await serve(deployment, "corrupt-w");
    const writing = client(writer.url);
    await writing.mutation(api.notes.add, { channel: "k", body: "good" });
    // Without hints: a hint would bring the writer's own bytes of the segment, and this is
    // about what the replica reads from the bucket.
    const replica = await serve(deployment, "corrupt-r", ["--replica", "--poll-interval-ms", "200", "--no-wake-hints"]);
    await eventually(async () => (await notes(replica, "k")).length === 1);
    const position = (await health(replica)).shards[0]!.appliedSeqno;

    replica.pause();
    await writing.mutation(api.notes.add, { channel: "k", body: "lost to corruption" });
    await writing.mutation(api.notes.add, { channel: "k", body: "after it" });
    // Flip bytes in the middle of the next segment the replica will read, through the
    // store (so that the store's own integrity check passes and the segment's must catch it).
    const store = await openObjectStore(bucket);
    const key = bucketLayout.segment(0, position + 1);
    const original = await store.get(key);
    if (original === null || original === "not-modified") throw new Error("the segment is missing");
    const bytes = Uint8Array.from(original.body);
    for (let at = Math.floor(bytes.length / 2); at < bytes.length; at++) bytes[at] = bytes[at]! ^ 0x5a;
    await store.delete(key);
    await store.create(key, bytes);
    await store.close();
    replica.resume();

    await eventually(async () => (await health(replica)).shards[0]!.lastError !== null);
    const state = await health(replica);
    expect(state.status).toBe("degraded");
    expect(state.shards[0]!.lastError!.code).toMatch(/SEGMENT_INVALID|SEGMENT_CHAIN_BROKEN/);
    expect(state.shards[0]!.appliedSeqno).toBe(position);
    expect(await notes(replica, "k")).toEqual(["good"]);
    const staleness = state.stalenessMs!;
    await eventually(async () => (await health(replica)).stalenessMs! > staleness);
  });

  it("answers WRITER_UNAVAILABLE when the writer does not answer, and keeps serving reads", async () => {
    const deployment = await directoryDeployment();
    // A short lease: the replica gives up once nobody took the dead writer's shard over.
    const writer = await serve(deployment, "dead-w", ["--engine-tuning", JSON.stringify({ leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 })]);
    await client(writer.url).mutation(api.counters.bump, { name: "x" });
    const replica = await serve(deployment, "dead-r", ["--replica"]);
    await eventually(async () => (await post(replica, "query", "counters:get", { name: "x" })).body.value === 1);
    await writer.kill();

    const answer = await post(replica, "mutation", "counters:bump", { name: "x" });
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe("WRITER_UNAVAILABLE");
    expect(answer.body.error.message).toMatch(/not reachable/);
    expect((await post(replica, "query", "counters:get", { name: "x" })).body.value).toBe(1);
    const state = await health(replica);
    expect(state.shards[0]!.stalenessMs).not.toBeNull();
    expect(state.role).toBe("replica");
  });
});

/**
 * An HTTP proxy to 127.0.0.1:`port` that, for forwarded mutations `drop()` approves,
 * passes the request on, waits for the writer's whole answer and then destroys the
 * connection instead of relaying it: a response lost after the write committed.
 */
async function lossyProxy(port: number, drop: () => boolean): Promise<{ server: Server; url: string }> {
  const server = createServer((incoming, outgoing) => {
    const lose = incoming.url === "/api/internal/forward/mutation" && drop();
    const upstream = httpRequest({ host: "127.0.0.1", port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
      if (lose) {
        answer.resume();
        answer.on("end", () => outgoing.socket?.destroy());
        return;
      }
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    upstream.on("error", () => outgoing.socket?.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` };
}
