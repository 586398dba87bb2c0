/**
 * Scenario: the functions runtime on a deployment of several shards (DESIGN.md §10), on
 * real engines and SQLite stores over an in-memory bucket and the S3 test endpoint:
 * documents go to the lane of their shard key (and their ids name it), mutations commit
 * on the lane of their shardBy value, queries merge every lane at one ts (asc, desc,
 * take, pagination), a mutation that would touch two shards is refused and writes
 * nothing, a shard key never changes, and a mutation's receipt records its shardBy
 * value's route (null without shardBy), one shard or several.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { laneOfValue, routeOfValue } from "../../src/functions/routing.js";
import { parseDocumentId, routeOfId, type DocumentId } from "../../src/model/DocumentId.js";
import { shardOfRoute } from "../../src/model/shardFor.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { memoryBucket, s3EndpointBucket } from "../support/bucketFactories.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as shardedApp from "./shardedApp.js";

const SHARDS = 3;
/** Channels spread over the three shards (found by the routing itself, so the test says which lane each is on). */
const CHANNELS = Array.from({ length: 40 }, (_, i) => `channel-${i}`);

describe.each([memoryBucket, s3EndpointBucket])("a runtime over 3 shards on $name", (factory) => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  async function setup(numShards = SHARDS) {
    const bucket = await factory.open();
    closing.push(() => bucket.close());
    const sharded = await ShardedStore.open({ store: bucket.store, localDirectory: ":memory:", nodeId: "w", numShards, random: new SeededRandom(1) });
    closing.push(() => sharded.close());
    await sharded.acquireAll();
    const runtime = await shardedRuntime(sharded, bucket.store, App.fromModule(shardedApp, "sharded test app"));
    return { sharded, runtime };
  }

  const shardOf = (channel: string) => laneOfValue(channel, SHARDS);

  /** The lanes whose local store holds the receipt (clientId, seq), with the route each holds (hex). */
  function receiptHolders(sharded: ShardedStore, clientId: string, seq: number): { lane: number; route: string | null }[] {
    return sharded.engines.flatMap((engine, lane) => {
      const found = engine.local.receipt(clientId, seq);
      return found === null ? [] : [{ lane, route: found.route === null ? null : hex(found.route) }];
    });
  }

  it("puts each document on its shard key's lane, with the route in its id; get and q.eq go to that lane", async () => {
    const { sharded, runtime } = await setup();
    const lanes = new Set(CHANNELS.map(shardOf));
    expect(lanes).toEqual(new Set([0, 1, 2])); // the channels cover every shard
    const ids: { channel: string; id: DocumentId }[] = [];
    for (const [n, channel] of CHANNELS.entries()) {
      const run = await runtime.runMutation("messages:send", { channel, n, body: `m${n}` });
      ids.push({ channel, id: run.value as DocumentId });
    }
    for (const { channel, id } of ids) {
      const lane = shardOf(channel);
      expect(shardOfRoute(routeOfId(parseDocumentId(id)), SHARDS)).toBe(lane);
      for (const [shard, engine] of sharded.engines.entries()) {
        expect(engine.local.get(id, engine.readTs) !== null).toBe(shard === lane);
      }
      expect((await runtime.runQuery("messages:get", { id })).value).toMatch(/^m\d+$/);
    }
    // Each shard's log holds exactly its own documents' commits.
    const perShard = sharded.engines.map((engine) => engine.position.nextSeqno);
    const expected = [0, 1, 2].map((lane) => CHANNELS.filter((channel) => shardOf(channel) === lane).length);
    const fencesAndTicks = perShard.map((next, lane) => next - expected[lane]!);
    expect(fencesAndTicks.every((extra) => extra >= 1)).toBe(true);
    const one = await runtime.runQuery("messages:inChannel", { channel: CHANNELS[5]! });
    expect(one.value).toEqual([5]);
  });

  it("merges the lanes of a query in index order, asc and desc, with take and pagination cursors", async () => {
    const { runtime } = await setup();
    for (const [n, channel] of CHANNELS.entries()) await runtime.runMutation("messages:send", { channel, n: (n * 7) % CHANNELS.length, body: "x" });
    const all = Array.from({ length: CHANNELS.length }, (_, n) => n);
    expect((await runtime.runQuery("messages:byN", { order: "asc", take: 40 })).value).toEqual(all);
    expect((await runtime.runQuery("messages:byN", { order: "desc", take: 5 })).value).toEqual([39, 38, 37, 36, 35]);
    expect((await runtime.runQuery("messages:byN", { order: "asc", take: 3 })).value).toEqual([0, 1, 2]);
    const seen: number[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const { value } = await runtime.runQuery("messages:page", { cursor, numItems: 6 });
      const result = value as { ns: number[]; cursor: string; isDone: boolean };
      seen.push(...result.ns);
      cursor = result.cursor;
      if (result.isDone) break;
    }
    expect(seen).toEqual(all);
  });

  it("refuses a mutation that would write two shards, or read every shard, and writes nothing", async () => {
    const { sharded, runtime } = await setup();
    const channel = CHANNELS[0]!;
    const other = CHANNELS.find((candidate) => shardOf(candidate) !== shardOf(channel))!;
    const before = sharded.engines.map((engine) => engine.position.nextSeqno);
    const twice = await runtime.runMutation("messages:sendTwice", { channel, other }).catch((error: unknown) => error);
    expect(hasErrorCode(twice, "CROSS_SHARD_MUTATION")).toBe(true);
    expect((twice as Error).message).toContain(`runs on shard ${shardOf(channel)}`);
    expect((twice as { details: { shards: number[] } }).details.shards).toEqual([shardOf(channel), shardOf(other)]);
    const scan = await runtime.runMutation("messages:countAll", { channel }).catch((error: unknown) => error);
    expect(hasErrorCode(scan, "CROSS_SHARD_MUTATION")).toBe(true);
    // An unsharded table lives on shard 0: a mutation of another lane may not write it.
    const elsewhere = CHANNELS.find((candidate) => shardOf(candidate) !== 0)!;
    expect(hasErrorCode(await runtime.runMutation("settings:setFrom", { channel: elsewhere, name: "a" }).catch((error: unknown) => error), "CROSS_SHARD_MUTATION")).toBe(true);
    expect(sharded.engines.map((engine) => engine.position.nextSeqno)).toEqual(before);
    expect((await runtime.runQuery("messages:byN", { order: "asc", take: 10 })).value).toEqual([]);
    // What stays on one lane works: a scan fixed to the mutation's channel, and shard 0's table without shardBy.
    await runtime.runMutation("messages:send", { channel, n: 1, body: "ok" });
    expect((await runtime.runMutation("messages:countIn", { channel })).value).toBe(1);
    await runtime.runMutation("settings:set", { name: "a", value: "b" });
    await runtime.runMutation("settings:setFrom", { channel: CHANNELS.find((candidate) => shardOf(candidate) === 0)!, name: "c" });
  });

  it("never changes a document's shard key, and a get of another lane's document from a mutation is refused", async () => {
    const { runtime } = await setup();
    const channel = CHANNELS[0]!;
    const other = CHANNELS.find((candidate) => shardOf(candidate) !== shardOf(channel))!;
    const id = (await runtime.runMutation("messages:send", { channel, n: 1, body: "before" })).value as DocumentId;
    const moved = await runtime.runMutation("messages:move", { id, channel, to: other }).catch((error: unknown) => error);
    expect(hasErrorCode(moved, "INVALID_ARGUMENT")).toBe(true);
    expect((moved as Error).message).toContain("shard key");
    const wrongLane = await runtime.runMutation("messages:edit", { id, channel: other, body: "after" }).catch((error: unknown) => error);
    expect(hasErrorCode(wrongLane, "CROSS_SHARD_MUTATION")).toBe(true);
    await runtime.runMutation("messages:edit", { id, channel, body: "after" });
    expect((await runtime.runQuery("messages:get", { id })).value).toBe("after");
  });

  it("a shardBy that gives no value is an INVALID_ARGUMENT of the call, and the receipt of a re-sent mutation is found on its lane", async () => {
    const { runtime } = await setup();
    const channel = CHANNELS[1]!;
    const first = await runtime.runMutation("messages:send", { channel, n: 3, body: "once" }, { clientId: "c1", seq: 1 });
    const again = await runtime.runMutation("messages:send", { channel, n: 3, body: "once" }, { clientId: "c1", seq: 1 });
    expect(again).toMatchObject({ replayed: true, ts: first.ts, value: first.value });
    expect(runtime.receipt("c1", 1)?.ts).toBe(first.ts);
    expect(runtime.mutationShard("messages:send", { channel, n: 3, body: "once" })).toBe(shardOf(channel));
    expect((await runtime.runQuery("messages:inChannel", { channel })).value).toEqual([3]);
  });

  it("records in a mutation's receipt the route of its shardBy value, on the lane of that route; null, on lane 0, without shardBy", async () => {
    const { sharded, runtime } = await setup();
    // One channel per lane, so that every lane gets a receipt.
    const onEachLane = [0, 1, 2].map((lane) => CHANNELS.find((channel) => shardOf(channel) === lane)!);
    for (const [seq, channel] of onEachLane.entries()) {
      await runtime.runMutation("messages:send", { channel, n: seq, body: "x" }, { clientId: "c", seq });
      const route = routeOfValue(channel);
      expect(receiptHolders(sharded, "c", seq)).toEqual([{ lane: shardOfRoute(route, SHARDS), route: hex(route) }]);
    }
    // A shardBy function's value is routed the same way.
    const channel = onEachLane[2]!;
    await runtime.runMutation("messages:countIn", { channel }, { clientId: "c", seq: 10 });
    expect(receiptHolders(sharded, "c", 10)).toEqual([{ lane: 2, route: hex(routeOfValue(channel)) }]);
    await runtime.runMutation("settings:set", { name: "a", value: "b" }, { clientId: "c", seq: 11 });
    expect(receiptHolders(sharded, "c", 11)).toEqual([{ lane: 0, route: null }]);
  });

  it("records the route with one shard too, where every mutation runs on lane 0", async () => {
    const { sharded, runtime } = await setup(1);
    const channel = CHANNELS[1]!;
    await runtime.runMutation("messages:send", { channel, n: 1, body: "x" }, { clientId: "c", seq: 1 });
    expect(receiptHolders(sharded, "c", 1)).toEqual([{ lane: 0, route: hex(routeOfValue(channel)) }]);
    await runtime.runMutation("settings:set", { name: "a", value: "b" }, { clientId: "c", seq: 2 });
    expect(receiptHolders(sharded, "c", 2)).toEqual([{ lane: 0, route: null }]);
  });
});

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
