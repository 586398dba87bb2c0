/**
 * Scenario: `reshardObjectStore` moves a stopped deployment between shard counts
 * (DESIGN.md §10) on real engines, SQLite files and an in-memory bucket, the S3 test
 * endpoint or (when CAIRN_TEST_S3_URL names one) a real S3 server: 1→3, 3→1 and 4→7 leave every document, index entry and receipt on its lane
 * with queries answering exactly as before, and new writes continuing above the old
 * timestamps. It refuses, changing nothing, while a writer's lease is live, while
 * another reshard holds the lock, for bad shard counts, for a bucket without a
 * deployment and for data that disagrees with the schema's shard keys; two reshards at
 * once: one wins, the other is told; a reshard that lost its lock (paused past it while a
 * node broke it) cannot switch; the deletion a run killed after its switch left undone is
 * finished by the next run, even a no-op one; a deletion that fails after the switch is
 * reported beside the switch, never as a failed reshard.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { CairnError } from "../../src/base/errors.js";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { laneOfValue } from "../../src/functions/routing.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { claimLayoutForWriting, HeldReshardLock } from "../../src/manifest/ReshardLock.js";
import { schemaCatalogObject } from "../../src/manifest/SchemaCatalog.js";
import { parseDocumentId, routeOfId, type DocumentId } from "../../src/model/DocumentId.js";
import { shardOfRoute } from "../../src/model/shardFor.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { ObservedObjectStore, type StoreCall } from "../../src/objectstore/ObservedObjectStore.js";
import { reshardObjectStore } from "../../src/shard/reshardObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { BUCKET_FACTORIES, memoryBucket, s3EndpointBucket } from "../support/bucketFactories.js";
import { shardedRuntime } from "../support/shardedRuntime.js";

type BucketFactory = typeof memoryBucket;
import * as shardedApp from "../functions/shardedApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-reshard-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let directories = 0;
const freshDirectory = () => join(root, `d${directories++}`);

const CHANNELS = Array.from({ length: 24 }, (_, i) => `channel-${i}`);
const app = App.fromModule(shardedApp, "sharded test app");

interface Node {
  readonly sharded: ShardedStore;
  readonly runtime: FunctionRuntime;
}

async function openNode(store: ObjectStore, numShards?: number): Promise<Node> {
  const sharded = await ShardedStore.open({
    store,
    localDirectory: freshDirectory(),
    nodeId: `node-${directories}`,
    ...(numShards !== undefined ? { numShards } : {}),
  });
  await sharded.acquireAll();
  const runtime = await shardedRuntime(sharded, store, app, systemRandom);
  return { sharded, runtime };
}

/** 72 messages over 24 channels (some edited: history), 3 settings, each with a receipt. */
async function populate(node: Node): Promise<DocumentId[]> {
  const ids: DocumentId[] = [];
  let seq = 0;
  for (let n = 0; n < 72; n++) {
    const channel = CHANNELS[n % CHANNELS.length]!;
    const run = await node.runtime.runMutation("messages:send", { channel, n, body: `m${n}` }, { clientId: "writer", seq: ++seq });
    ids.push(run.value as DocumentId);
  }
  for (let n = 0; n < 72; n += 5) {
    await node.runtime.runMutation("messages:edit", { id: ids[n]!, channel: CHANNELS[n % CHANNELS.length]!, body: `edited ${n}` }, { clientId: "writer", seq: ++seq });
  }
  for (const name of ["a", "b", "c"]) await node.runtime.runMutation("settings:set", { name, value: name }, { clientId: "writer", seq: ++seq });
  return ids;
}

/** Every answer the tests compare before and after: merges, pagination, one-lane scans, gets. */
async function answers(node: Node, ids: readonly DocumentId[]) {
  const pages: unknown[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = (await node.runtime.runQuery("messages:page", { cursor, numItems: 10 })).value as { ns: number[]; cursor: string; isDone: boolean };
    pages.push(page.ns);
    if (page.isDone) break;
    cursor = page.cursor;
  }
  return {
    asc: (await node.runtime.runQuery("messages:byN", { order: "asc", take: 1000 })).value,
    desc: (await node.runtime.runQuery("messages:byN", { order: "desc", take: 7 })).value,
    pages,
    channels: await Promise.all(CHANNELS.map(async (channel) => (await node.runtime.runQuery("messages:inChannel", { channel })).value)),
    bodies: await Promise.all(ids.map(async (id) => (await node.runtime.runQuery("messages:get", { id })).value)),
  };
}

/** Checks every stored row of every lane routes to that lane, and returns what each lane holds. */
async function checkLanes(node: Node): Promise<{ documents: number; receipts: number }> {
  const numShards = node.sharded.numShards;
  const catalog = node.runtime.catalog;
  let documents = 0;
  let receipts = 0;
  for (const [lane, engine] of node.sharded.engines.entries()) {
    const cursor = await engine.local.openDumpCursor();
    try {
      for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) {
        for (const row of chunk.rows) {
          if (chunk.kind === "receipts") {
            const receipt = row as { route: Uint8Array | null };
            expect(receipt.route === null ? 0 : shardOfRoute(receipt.route, numShards)).toBe(lane);
            receipts++;
            continue;
          }
          const id = (chunk.kind === "documents" ? (row as { id: DocumentId }).id : (row as { docId: DocumentId }).docId);
          const parsed = parseDocumentId(id);
          const table = [...catalog.tables].find((candidate) => candidate.number === parsed.tableNumber)!;
          expect(table.shardKey === null ? 0 : shardOfRoute(routeOfId(parsed), numShards)).toBe(lane);
          if (chunk.kind === "documents") documents++;
        }
      }
    } finally {
      cursor.close();
    }
  }
  return { documents, receipts };
}

async function bucketState(store: ObjectStore): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for await (const entry of store.list("")) keys.set(entry.key, entry.etag);
  return keys;
}

describe.each<{ factory: BucketFactory; moves: [number, number][] }>([
  { factory: memoryBucket, moves: [[1, 3], [3, 1], [4, 7]] },
  { factory: s3EndpointBucket, moves: [[1, 3]] },
  // The real S3 server of CAIRN_TEST_S3_URL when there is one (radosgw in CI).
  ...BUCKET_FACTORIES.filter((factory) => factory !== memoryBucket && factory !== s3EndpointBucket).map((factory) => ({ factory, moves: [[3, 1]] as [number, number][] })),
])("reshard on $factory.name", ({ factory, moves }) => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  async function bucket() {
    const opened = await factory.open();
    closing.push(() => opened.close());
    return opened.store;
  }

  it.each(moves)("%i → %i keeps every row on its lane and every answer the same", async (fromShards, toShards) => {
    const store = await bucket();
    const before = await openNode(store, fromShards);
    const ids = await populate(before);
    const expected = await answers(before, ids);
    const lanesBefore = await checkLanes(before);
    const highestTs = before.sharded.readTs;
    await before.sharded.close();

    const phases = new Set<string>();
    const report = await reshardObjectStore({ store, toShards, onProgress: (progress) => phases.add(progress.phase) });
    expect(report).toMatchObject({ changed: true, fromShards, toShards, generation: 1, documents: lanesBefore.documents });
    expect([...phases]).toEqual(["lock", "read", "write", "written", "switch", "cleanup"]);
    expect(report.frontierTs).toBeGreaterThanOrEqual(highestTs);
    const globals = (await globalsObject(store, systemRandom).read())!.value;
    expect(globals).toMatchObject({ numShards: toShards, generation: 1, retired: [], reshard: null });
    // The old layout is gone; only the new generation, globals and the catalog remain.
    const keys = [...(await bucketState(store)).keys()];
    expect(keys.filter((key) => !key.startsWith("g1/") && key !== "globals" && key !== "schema")).toEqual([]);

    const after = await openNode(store);
    closing.push(() => after.sharded.close());
    expect(after.sharded.numShards).toBe(toShards);
    expect(await answers(after, ids)).toEqual(expected);
    expect(await checkLanes(after)).toEqual(lanesBefore);
    // Retries are still answered from their receipts, now on their new lanes.
    const retried = await after.runtime.runMutation("messages:send", { channel: CHANNELS[0]!, n: 0, body: "m0" }, { clientId: "writer", seq: 1 });
    expect(retried.replayed).toBe(true);
    expect(retried.value).toBe(ids[0]);
    // New writes land on their new lanes above every old timestamp.
    const channel = CHANNELS[3]!;
    const fresh = await after.runtime.runMutation("messages:send", { channel, n: 1000, body: "new" });
    expect(fresh.ts).toBeGreaterThan(report.frontierTs);
    expect(shardOfRoute(routeOfId(parseDocumentId(fresh.value)), toShards)).toBe(laneOfValue(channel, toShards));
    expect((await after.runtime.runQuery("messages:inChannel", { channel })).value).toEqual([...(expected.channels[3] as number[]), 1000]);
  });

  it("refuses while a writer's lease is live and changes nothing", async () => {
    const store = await bucket();
    const node = await openNode(store, 2);
    closing.push(() => node.sharded.close());
    await populate(node);
    // The live writer keeps ticking into its own log meanwhile, so "changes nothing" is
    // checked on the calls the reshard itself made, not on the whole bucket.
    const calls: StoreCall[] = [];
    const observed = new ObservedObjectStore(store, (call) => calls.push(call));
    await expect(reshardObjectStore({ store: observed, toShards: 3 })).rejects.toMatchObject({ code: "LEASE_HELD", details: { shard: 0 } });
    expect(calls.filter((call) => call.operation !== "get" && call.operation !== "list")).toEqual([]);
    expect(calls.length).toBeGreaterThan(0);
  });
});

describe("reshard refusals", () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  async function stoppedDeployment(numShards: number) {
    const opened = await memoryBucket.open();
    closing.push(() => opened.close());
    const node = await openNode(opened.store, numShards);
    const ids = await populate(node);
    await node.sharded.close();
    return { store: opened.store, ids };
  }

  it("refuses bad shard counts and a bucket without a deployment, and a same count is a no-op", async () => {
    const { store } = await stoppedDeployment(2);
    const state = await bucketState(store);
    for (const toShards of [0, -1, 1.5, Number.NaN, 1025, "3" as unknown as number]) {
      await expect(reshardObjectStore({ store, toShards })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    expect(await reshardObjectStore({ store, toShards: 2 })).toMatchObject({ changed: false, fromShards: 2, toShards: 2 });
    expect(await bucketState(store)).toEqual(state);
    const empty = await memoryBucket.open();
    closing.push(() => empty.close());
    await expect(reshardObjectStore({ store: empty.store, toShards: 2 })).rejects.toMatchObject({ code: "DEPLOYMENT_MISMATCH" });
    expect(await bucketState(empty.store)).toEqual(new Map());
  });

  it("a run killed after its switch leaves only the deletion; a no-op run finishes it", async () => {
    const { store } = await stoppedDeployment(1);
    await reshardObjectStore({ store, toShards: 2 });
    // As if the run died right after the switch: generation 0 still listed, a key of it left.
    const globals = globalsObject(store, systemRandom);
    const current = (await globals.read())!;
    const { version: _version, nonce: _nonce, ...fields } = current.value;
    await globals.replace(current, { ...fields, retired: [{ generation: 0, numShards: 1 }] });
    await store.create("s0/log/00000000000000000007", new Uint8Array([1]));
    expect(await reshardObjectStore({ store, toShards: 2 })).toMatchObject({ changed: false, objectsDeleted: 1 });
    expect((await globals.read())!.value).toMatchObject({ numShards: 2, generation: 1, retired: [], reshard: null });
    expect([...(await bucketState(store)).keys()].filter((key) => key.startsWith("s"))).toEqual(["schema"]);
  });

  it("a switch is never reported as failed: a deletion that fails after it is reported, and the next run finishes it", async () => {
    const { store, ids } = await stoppedDeployment(1);
    let failDeletes = true;
    const flaky: ObjectStore = {
      description: store.description,
      get: (key, options) => store.get(key, options),
      create: (key, body) => store.create(key, body),
      casPut: (key, body, etag) => store.casPut(key, body, etag),
      delete: (key) => store.delete(key),
      deleteMany: async (keys) => {
        if (failDeletes) throw new CairnError("STORE_UNREACHABLE", "the bucket went away");
        await store.deleteMany(keys);
      },
      list: (prefix, options) => store.list(prefix, options),
      close: async () => undefined,
    };
    const report = await reshardObjectStore({ store: flaky, toShards: 2 });
    expect(report).toMatchObject({ changed: true, generation: 1, cleanupError: expect.stringMatching(/went away/) });
    expect((await globalsObject(store, systemRandom).read())!.value).toMatchObject({ numShards: 2, generation: 1, retired: [{ generation: 0, numShards: 1 }] });
    failDeletes = false;
    expect(await reshardObjectStore({ store: flaky, toShards: 2 })).toMatchObject({ changed: false, cleanupError: null });
    expect((await globalsObject(store, systemRandom).read())!.value.retired).toEqual([]);
    expect([...(await bucketState(store)).keys()].filter((key) => key.startsWith("s0/"))).toEqual([]);
    const node = await openNode(store);
    closing.push(() => node.sharded.close());
    expect((await node.runtime.runQuery("messages:get", { id: ids[9]! })).value).toBe("m9");
  });

  it("two reshards at once: one wins, the other is told another holds the deployment", async () => {
    const { store, ids } = await stoppedDeployment(2);
    const results = await Promise.allSettled([reshardObjectStore({ store, toShards: 3 }), reshardObjectStore({ store, toShards: 5 })]);
    const won = results.filter((result) => result.status === "fulfilled");
    const lost = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toMatchObject({ code: "RESHARD_IN_PROGRESS" });
    const winner = (won[0] as PromiseFulfilledResult<{ toShards: number }>).value.toShards;
    const node = await openNode(store);
    closing.push(() => node.sharded.close());
    expect(node.sharded.numShards).toBe(winner);
    expect((await node.runtime.runQuery("messages:get", { id: ids[7]! })).value).toBe("m7");
  });

  it("refuses data whose shard keys disagree with the schema, switching nothing; the old layout still serves", async () => {
    const { store, ids } = await stoppedDeployment(2);
    // The catalog now says messages are sharded by body: every stored id routes by channel.
    const catalog = schemaCatalogObject(store, systemRandom);
    const current = (await catalog.read())!;
    const { version: _version, nonce: _nonce, ...fields } = current.value;
    await catalog.replace(current, { ...fields, tables: fields.tables.map((table) => (table.name === "messages" ? { ...table, shardKey: "body" } : table)) });
    await expect(reshardObjectStore({ store, toShards: 3 })).rejects.toMatchObject({ code: "RESHARD_DATA_MISMATCH" });
    const globals = (await globalsObject(store, systemRandom).read())!.value;
    expect(globals).toMatchObject({ numShards: 2, generation: 0, reshard: null });
    expect([...(await bucketState(store)).keys()].filter((key) => key.startsWith("g"))).toEqual(["globals"]);
    await catalog.replace((await catalog.read())!, fields);
    const node = await openNode(store);
    closing.push(() => node.sharded.close());
    expect(node.sharded.numShards).toBe(2);
    expect((await node.runtime.runQuery("messages:get", { id: ids[3]! })).value).toBe("m3");
  });

  it("a node cannot write while a reshard holds the lock; a reshard whose expired lock a node broke cannot switch", async () => {
    const { store } = await stoppedDeployment(1);
    let now = systemClock.nowMs();
    const lock = await HeldReshardLock.take(store, systemRandom, { owner: "paused", nowMs: now, ttlMs: 1_000, toShards: 2 });
    await expect(claimLayoutForWriting(store, systemRandom, () => now, 0)).rejects.toMatchObject({ code: "RESHARD_IN_PROGRESS" });
    const node = await ShardedStore.open({ store, localDirectory: freshDirectory(), nodeId: "blocked" });
    closing.push(() => node.close());
    await expect(node.acquireAll()).rejects.toMatchObject({ code: "RESHARD_IN_PROGRESS" });
    // The reshard pauses past its lock; a node breaks the lock to write the old layout.
    now += 5_000;
    await claimLayoutForWriting(store, systemRandom, () => now, 0);
    await expect(lock.switchLayout()).rejects.toMatchObject({ code: "RESHARD_IN_PROGRESS" });
    expect((await globalsObject(store, systemRandom).read())!.value).toMatchObject({ numShards: 1, generation: 0, reshard: null, highestGeneration: 1 });
    // The next reshard takes a generation above the abandoned one and deletes it.
    const next = await HeldReshardLock.take(store, systemRandom, { owner: "next", nowMs: now, ttlMs: 1_000, toShards: 2 });
    expect(next.generation).toBe(2);
    expect(next.abandonedGenerations).toEqual([1]);
    await next.release();
    // A node that opened the old layout refuses to acquire once globals name another.
    await expect(claimLayoutForWriting(store, systemRandom, () => now, 7)).rejects.toMatchObject({ code: "DEPLOYMENT_RESHARDED" });
  });
});
