/**
 * Scenario: the functions runtime on three shards (real engines and SQLite stores over an
 * in-memory bucket) with receipts bound to identities and client floors. Two identities
 * sending the same (clientId, seq) at once never share one result: one commits, the other
 * learns nothing (RECEIPT_IDENTITY_MISMATCH) and writes nothing. A client's floor, set by
 * a mutation on one lane, refuses its acknowledged seqs on every lane
 * (MUTATION_SEQ_BELOW_FLOOR), and its receipts below the floor on that lane are pruned.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { laneOfValue } from "../../src/functions/routing.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as shardedApp from "./shardedApp.js";

const SHARDS = 3;
const CHANNELS = Array.from({ length: 40 }, (_, i) => `channel-${i}`);
const ADA = { subject: "ada", issuer: "https://id.example" };
const EVE = { subject: "eve", issuer: "https://id.example" };

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function setup() {
  const bucket = await memoryBucket.open();
  closing.push(() => bucket.close());
  const sharded = await ShardedStore.open({ store: bucket.store, localDirectory: ":memory:", nodeId: "w", numShards: SHARDS, random: new SeededRandom(1) });
  closing.push(() => sharded.close());
  await sharded.acquireAll();
  const runtime = await shardedRuntime(sharded, bucket.store, App.fromModule(shardedApp, "sharded test app"));
  return { sharded, runtime };
}

function onLane(lane: number): string {
  return CHANNELS.find((channel) => laneOfValue(channel, SHARDS) === lane)!;
}

async function failure(run: Promise<unknown>): Promise<{ code?: string; details?: Record<string, unknown>; message: string }> {
  return run.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (error: { code?: string; details?: Record<string, unknown>; message: string }) => error,
  );
}

describe("receipts on a runtime of 3 shards", () => {
  it("never shares one (clientId, seq) between identities, also when both send it at once", async () => {
    const { runtime } = await setup();
    const channel = onLane(1);
    const identities = [ADA, EVE];
    const runs = await Promise.allSettled(
      identities.map((identity, n) => runtime.runMutation("messages:send", { channel, n, body: `${identity.subject}'s` }, { identity, clientId: "shared", seq: 1 })),
    );
    // One of them commits; the other learns nothing of its result and writes nothing.
    const winner = runs.findIndex((run) => run.status === "fulfilled");
    const loser = 1 - winner;
    expect(runs[loser]).toMatchObject({ status: "rejected", reason: { code: "RECEIPT_IDENTITY_MISMATCH" } });
    expect(JSON.stringify(runs[loser])).not.toContain((runs[winner] as PromiseFulfilledResult<{ value: string }>).value.value);
    expect((await runtime.runQuery("messages:inChannel", { channel })).value).toEqual([winner]);
    // The winner's re-send is answered from its receipt; the loser's and an anonymous one are refused again.
    const resend = (identity: typeof ADA | null) =>
      runtime.runMutation("messages:send", { channel, n: 5, body: "again" }, { identity, clientId: "shared", seq: 1 });
    expect(await resend(identities[winner]!)).toMatchObject({ replayed: true });
    expect((await failure(resend(identities[loser]!))).code).toBe("RECEIPT_IDENTITY_MISMATCH");
    expect((await failure(resend(null))).code).toBe("RECEIPT_IDENTITY_MISMATCH");
    expect(runtime.receiptFor("shared", 1, identities[loser])).toEqual({ kind: "another" });
    expect((await runtime.runQuery("messages:inChannel", { channel })).value).toEqual([winner]);
  });

  it("refuses a client's acknowledged seqs on every lane once a mutation on one lane set its floor", async () => {
    const { sharded, runtime } = await setup();
    const [zero, one, two] = [onLane(0), onLane(1), onLane(2)];
    const send = (channel: string, seq: number, ackedThrough?: number) =>
      runtime.runMutation("messages:send", { channel, n: seq, body: `m${seq}` }, { identity: ADA, clientId: "phone", seq, ...(ackedThrough !== undefined ? { ackedThrough } : {}) });
    await send(zero, 1);
    await send(one, 2);
    await send(two, 3, 1);
    // Seq 1 (lane 0) and 2 (lane 1, acknowledged by nothing yet) are told apart.
    expect(await failure(send(zero, 1))).toMatchObject({ code: "MUTATION_SEQ_BELOW_FLOOR", details: { floorSeq: 2 } });
    expect(await send(one, 2)).toMatchObject({ replayed: true });
    await send(zero, 4, 3);
    for (const [channel, seq] of [[one, 2], [two, 3]] as const) {
      expect(await failure(send(channel, seq))).toMatchObject({ code: "MUTATION_SEQ_BELOW_FLOOR", details: { clientId: "phone", seq, floorSeq: 4 } });
    }
    // Lane 0's fold prunes its receipts below the floor there (seq 1); the floor's own receipt stays.
    await sharded.engines[0]!.local.flush();
    expect(sharded.engines[0]!.local.receipt("phone", 1)).toBeNull();
    expect(sharded.engines[0]!.local.receipt("phone", 4)).toMatchObject({ floorSeq: 4 });
    for (const channel of [zero, one, two]) expect((await runtime.runQuery("messages:inChannel", { channel })).value).toHaveLength(channel === zero ? 2 : 1);
    // Another identity's floor is its own.
    expect(await runtime.runMutation("messages:send", { channel: zero, n: 9, body: "eve" }, { identity: EVE, clientId: "phone", seq: 1 })).toMatchObject({ replayed: false });
  });
});
