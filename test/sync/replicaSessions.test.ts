/**
 * Sessions served by a replica's sync handler (in process: a writer engine and a
 * following engine over one memory bucket, real SQLite, real runtimes): the handler is
 * fed by the follower's applied segments and snapshot restores, exactly as a node wires
 * it. What must hold: a client that has seen ts T is never served an older state (it
 * waits for the frontier, or is told REPLICA_BEHIND); a restore that replaced the local
 * state re-runs every subscription, although no written keys name them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { CLOSE_CODES } from "../../src/sync/protocol.js";
import { runtimeBackend } from "../../src/sync/runtimeBackend.js";
import { SyncHandler } from "../../src/sync/SyncHandler.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { ShardHarness, type HarnessNode } from "../support/shardHarness.js";
import { ModelClient } from "./syncHarness.js";
import * as syncApp from "./syncApp.js";

const app = App.fromModule(syncApp, "sync test app");
const harnesses: ShardHarness[] = [];
const handlers: SyncHandler[] = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.close(0);
  for (const harness of harnesses.splice(0)) await harness.close();
});

interface ReplicaFixture {
  readonly h: ShardHarness;
  readonly writer: HarnessNode;
  readonly writerRuntime: FunctionRuntime;
  readonly replica: HarnessNode;
  readonly handler: SyncHandler;
  readonly restores: number[];
}

async function replicaFixture(connectFrontierWaitMs = 30_000): Promise<ReplicaFixture> {
  const h = await ShardHarness.create(memoryBucket);
  harnesses.push(h);
  const writer = await h.writer("writer");
  const catalog = await resolveCatalog(h.bucket, app.schema, new SeededRandom(3));
  const writerRuntime = new FunctionRuntime({ app, catalog, shard: writer.engine });
  const replica = await h.node("replica");
  const replicaRuntime = new FunctionRuntime({ app, catalog, shard: replica.engine });
  // The handler's own waits run on real time; the engines on the harness's manual clock.
  const handler = new SyncHandler({ backend: runtimeBackend(h.deploymentId, replicaRuntime, replica.engine), clock: systemClock, connectFrontierWaitMs });
  handlers.push(handler);
  const restores: number[] = [];
  replica.engine.onSegmentApplied((segment) => handler.segmentApplied(segment));
  replica.engine.onRestored((ts) => {
    restores.push(ts);
    handler.storeRestored(ts);
  });
  return { h, writer, writerRuntime, replica, handler, restores };
}

describe("a replica's sessions", () => {
  it("hold a client that has seen a newer ts until the tail reaches it, and never answer older", async () => {
    const { writerRuntime, replica, handler } = await replicaFixture();
    await writerRuntime.runMutation("counters:bump", { name: "seen" }, { identity: null });
    const seen = await writerRuntime.runMutation("counters:bump", { name: "seen" }, { identity: null });
    // The client saw ts `seen.ts` on the writer; the replica has not read it yet.
    expect(handler.currentTs).toBeLessThan(seen.ts);
    const client = new ModelClient(handler, "observer", false);
    const acked = client.connect({ maxObservedTs: seen.ts });
    let answered = false;
    void acked.then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    expect(client.frames).toEqual([]);

    await replica.engine.catchUpToTail();
    const ack = await acked;
    expect(ack.ts).toBeGreaterThanOrEqual(seen.ts);
    const queryId = await client.subscribe("counters:get", { name: "seen" });
    expect(client.valueOf(queryId)).toBe(2);
    expect(client.version.ts).toBeGreaterThanOrEqual(seen.ts);
  });

  it("end the session with REPLICA_BEHIND when the tail does not get there in time", async () => {
    const { writerRuntime, handler } = await replicaFixture(100);
    const seen = await writerRuntime.runMutation("counters:bump", { name: "late" }, { identity: null });
    const client = new ModelClient(handler, "too-new", false);
    client.write({ type: "Connect", sessionId: "too-new", maxObservedTs: seen.ts });
    const fatal = await client.next((message) => message.type === "FatalError");
    expect(fatal).toMatchObject({ type: "FatalError", error: { code: "REPLICA_BEHIND" } });
    expect(client.closedWith?.code).toBe(CLOSE_CODES.behind);
    expect(client.frames.some((message) => message.type === "ConnectAck" || message.type === "Transition")).toBe(false);
  });

  it("re-run every subscription after a snapshot restore replaced the local state", async () => {
    const { writer, writerRuntime, replica, handler, restores } = await replicaFixture();
    await writerRuntime.runMutation("notes:add", { channel: "a", body: "first" }, { identity: null });
    await replica.engine.catchUpToTail();
    const client = new ModelClient(handler, "subscriber", false);
    await client.connect();
    const notesA = await client.subscribe("notes:list", { channel: "a" });
    const counter = await client.subscribe("counters:get", { name: "c" });
    expect(client.valueOf(notesA)).toEqual(["first"]);

    // While the replica does not read, the writer moves on, snapshots, and collects the log
    // below the snapshot: the replica's next slot is gone.
    for (let i = 0; i < 3; i++) await writerRuntime.runMutation("notes:add", { channel: "a", body: `more-${i}` }, { identity: null });
    await writerRuntime.runMutation("counters:bump", { name: "c" }, { identity: null });
    await writer.engine.snapshotNow();
    const collected = await writer.engine.collectGarbageNow();
    expect(collected.logStartAfter).toBeGreaterThan(replica.engine.position.nextSeqno);

    await replica.engine.catchUpToTail();
    expect(restores).toHaveLength(1);
    await client.reachTs(restores[0]!);
    expect(client.valueOf(notesA)).toEqual(["first", "more-0", "more-1", "more-2"]);
    expect(client.valueOf(counter)).toBe(1);
    expect(client.versionMismatches).toEqual([]);
  });
});
