/**
 * Scenarios: the sync handler on a real writer, driven by protocol-level clients — live
 * updates between sessions, the order of a mutation's response and its Transition,
 * which subscriptions a commit re-runs (and how often), a query run that overlaps a
 * commit, reconnects answered with QueryUnchanged, receipts in ConnectAck, batches,
 * identity, broadcasts, and every kind of bad frame.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/errors.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import type { TokenVerifier } from "../../src/sync/TokenVerifier.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { Gate, eventually } from "../support/Gate.js";
import { harnessPerTest } from "../support/shardHarness.js";
import { syncFixture, type ModelClient, type SyncFixture } from "./syncHarness.js";

const verifier: TokenVerifier = {
  verify: async (token) => {
    if (!token.startsWith("user:")) throw new CairnError("UNAUTHENTICATED", "not a test token");
    // "user:name:expired" is a token whose expiry has passed by the next sweep.
    const [, subject, expired] = token.split(":");
    return { identity: { subject: subject! }, expiresAtMs: expired === "expired" ? Date.now() - 1 : null };
  },
};

describe("the sync handler", () => {
  const harness = harnessPerTest(memoryBucket);
  let fixture: SyncFixture | null = null;
  afterEach(async () => {
    await fixture?.handler.close(0);
    fixture = null;
  });
  const open = async () => (fixture = await syncFixture(await harness(), { verifier }));

  it("pushes a commit to the sessions whose queries it changed, and only to them", async () => {
    const f = await open();
    const reader = f.client();
    const other = f.client();
    const writer = f.client();
    await Promise.all([reader.connect(), other.connect(), writer.connect()]);
    const general = await reader.subscribe("notes:list", { channel: "general" });
    const random = await other.subscribe("notes:list", { channel: "random" });
    expect(reader.valueOf(general)).toEqual([]);
    const runsBefore = f.runs.get("notes:list");
    const response = await writer.mutate("notes:add", { channel: "general", body: "hello" });
    expect(response).toMatchObject({ success: true, value: 5 });
    await reader.reachTs(response.ts!);
    expect(reader.valueOf(general)).toEqual(["hello"]);
    // The other channel's subscription read other index keys: not re-run, nothing sent.
    expect(f.runs.get("notes:list")).toBe(runsBefore! + 1);
    expect(other.frames.filter((frame) => frame.type === "Transition")).toHaveLength(1);
    expect(other.valueOf(random)).toEqual([]);
    for (const client of [reader, other, writer]) expect(client.versionMismatches).toEqual([]);
  });

  it("answers a mutation before the Transition that contains it, and advances the origin even when none of its queries changed", async () => {
    const f = await open();
    const origin = f.client();
    await origin.connect();
    const counter = await origin.subscribe("counters:get", { name: "a" });
    const unrelated = await origin.subscribe("notes:list", { channel: "elsewhere" });
    const bumped = await origin.mutate("counters:bump", { name: "a" });
    await origin.reachTs(bumped.ts!);
    const responseAt = origin.frames.indexOf(origin.frames.find((frame) => frame.type === "MutationResponse")!);
    const coveringAt = origin.frames.findIndex((frame) => frame.type === "Transition" && frame.endVersion.ts >= bumped.ts!);
    expect(responseAt).toBeLessThan(coveringAt);
    expect(origin.valueOf(counter)).toBe(1);
    // A commit none of its queries read still moves the origin to its ts, with an empty Transition.
    const note = await origin.mutate("notes:add", { channel: "general", body: "x" });
    await origin.reachTs(note.ts!);
    const last = origin.frames.at(-1) as Extract<ServerMessage, { type: "Transition" }>;
    expect(last).toMatchObject({ type: "Transition", modifications: [] });
    expect(last.endVersion.ts).toBeGreaterThanOrEqual(note.ts!);
    expect(origin.valueOf(unrelated)).toEqual([]);
    expect(origin.versionMismatches).toEqual([]);
  });

  it("sends a mutation's response only once its segment is in the bucket", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    const gate = new Gate();
    f.node.store.inject({ operations: ["create"], keyPattern: /\/log\//, once: true, effect: { until: gate.promise } });
    const answered = client.mutate("notes:add", { channel: "c", body: "durable" });
    await eventually(() => f.node.store.held === 1);
    // The segment's create is held at the bucket: nothing may answer the mutation yet.
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
    expect(client.frames.some((frame) => frame.type === "MutationResponse")).toBe(false);
    gate.open();
    const response = await answered;
    expect(response).toMatchObject({ success: true, value: 7 });
    expect(f.node.store.writes.some((key) => /\/log\//.test(key))).toBe(true);
  });

  it("runs identical subscriptions of many sessions once per commit", async () => {
    const f = await open();
    const sessions = Array.from({ length: 20 }, () => f.client());
    await Promise.all(sessions.map((session) => session.connect()));
    const ids = await Promise.all(sessions.map((session) => session.subscribe("counters:get", { name: "shared" })));
    const before = f.runs.get("counters:get")!;
    const writer = f.client();
    await writer.connect();
    const bumped = await writer.mutate("counters:bump", { name: "shared" });
    await Promise.all(sessions.map((session) => session.reachTs(bumped.ts!)));
    sessions.forEach((session, at) => expect(session.valueOf(ids[at]!)).toBe(1));
    expect(f.runs.get("counters:get")! - before).toBe(1);
  });

  it("re-runs a query whose run overlapped a commit that changed what it read", async () => {
    const f = await open();
    const reader = f.client();
    const writer = f.client();
    await Promise.all([reader.connect(), writer.connect()]);
    const held = f.hold("notes:list");
    const subscribed = reader.subscribe("notes:list", { channel: "race" });
    await held.reached;
    // The run reads at the old ts; this commit is matched before the run's ranges are in the index.
    const added = await writer.mutate("notes:add", { channel: "race", body: "late" });
    held.release();
    const queryId = await subscribed;
    await reader.reachTs(added.ts!);
    expect(reader.valueOf(queryId)).toEqual(["late"]);
    expect(reader.versionMismatches).toEqual([]);
  });

  it("answers a reconnect's unchanged queries with QueryUnchanged and changed ones with their value", async () => {
    const f = await open();
    const first = f.client();
    await first.connect();
    const kept = await first.subscribe("notes:list", { channel: "kept" });
    const moved = await first.subscribe("notes:list", { channel: "moved" });
    const hashes = { kept: first.results.get(kept)!.hash, moved: first.results.get(moved)!.hash };
    first.connection.closed();
    const writer = f.client();
    await writer.connect();
    await writer.mutate("notes:add", { channel: "moved", body: "while away" });
    const second = f.client();
    await second.connect();
    const base = second.version.querySet;
    second.write({
      type: "ModifyQuerySet",
      baseVersion: base,
      newVersion: base + 1,
      add: [
        { queryId: 1, path: "notes:list", args: { channel: "kept" }, resultHash: hashes.kept },
        { queryId: 2, path: "notes:list", args: { channel: "moved" }, resultHash: hashes.moved },
      ],
      remove: [],
    });
    const transition = (await second.next((message) => message.type === "Transition")) as Extract<ServerMessage, { type: "Transition" }>;
    expect(transition.modifications).toEqual([
      { type: "QueryUnchanged", queryId: 1, hash: hashes.kept },
      expect.objectContaining({ type: "QueryUpdated", queryId: 2, value: ["while away"] }),
    ]);
  });

  it("tells a reconnecting client which held mutations committed, from their receipts", async () => {
    const f = await open();
    const before = f.client();
    await before.connect();
    const committed = await before.mutate("counters:bump", { name: "r" }, { clientId: "client-1", seq: 1 });
    const after = f.client();
    const ack = await after.connect({ clientId: "client-1", held: [1, 2], ackedThrough: 0 });
    expect(ack.known).toEqual([1]);
    expect(ack.results).toEqual([{ seq: 1, value: 1, ts: committed.ts }]);
    // Re-sent anyway, it is answered from the receipt and not applied again.
    const again = await after.mutate("counters:bump", { name: "r" }, { clientId: "client-1", seq: 1 });
    expect(again).toMatchObject({ success: true, value: 1, ts: committed.ts, replayed: true });
    expect((await f.runtime.runQuery("counters:get", { name: "r" })).value).toBe(1);
  });

  it("runs a batch in order: a terminal failure is answered and the batch goes on; a transient one stops it", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    const entries = (paths: string[], from: number) => paths.map((path, at) => ({ requestId: from + at, path, args: path === "notes:fail" ? {} : { name: "b" } }));
    client.write({ type: "MutationBatch", entries: entries(["counters:bump", "notes:fail", "counters:bump"], 100) });
    const answers = await Promise.all([100, 101, 102].map((id) => client.next((m) => m.type === "MutationResponse" && m.requestId === id)));
    expect(answers.map((answer) => (answer as { success: boolean }).success)).toEqual([true, false, true]);
    expect(answers[1]).toMatchObject({ error: { code: "FUNCTION_FAILED" } });
    f.failNextMutation("counters:bump", new CairnError("STORE_TRANSIENT", "injected"));
    client.write({ type: "MutationBatch", entries: entries(["counters:bump", "counters:bump"], 200) });
    const stopped = await Promise.all([200, 201].map((id) => client.next((m) => m.type === "MutationResponse" && m.requestId === id)));
    expect(stopped[0]).toMatchObject({ success: false, error: { code: "STORE_TRANSIENT" } });
    expect(stopped[1]).toMatchObject({ success: false, error: { code: "MUTATION_NOT_RUN" } });
    expect((await f.runtime.runQuery("counters:get", { name: "b" })).value).toBe(2);
  });

  it("passes the verified identity to functions, re-runs subscriptions when it changes, and survives a bad token", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    const who = await client.subscribe("users:whoami", {});
    expect(client.valueOf(who)).toBeNull();
    client.write({ type: "SetAuth", token: "user:ada" });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: true, subject: "ada" });
    await client.next((m) => m.type === "Transition" && m.modifications.length > 0);
    expect(client.valueOf(who)).toBe("ada");
    client.write({ type: "Action", requestId: 7, path: "users:echo", args: { text: "hi" } });
    expect(await client.next((m) => m.type === "ActionResponse")).toMatchObject({ success: true, value: "ada: hi" });
    client.write({ type: "SetAuth", token: "forged" });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: false, error: { code: "UNAUTHENTICATED" } });
    await client.next((m) => m.type === "Transition" && m.modifications.length > 0);
    expect(client.valueOf(who)).toBeNull();
    expect(client.closedWith).toBeNull();
  });

  it("makes a session anonymous when its token expires, and says so", async () => {
    const f = (fixture = await syncFixture(await harness(), { verifier, sweepIntervalMs: 5 }));
    const client = f.client();
    await client.connect();
    const who = await client.subscribe("users:whoami", {});
    client.write({ type: "SetAuth", token: "user:eve:expired" });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: true, subject: "eve" });
    expect(await client.next((m) => m.type === "AuthExpired")).toMatchObject({ error: { code: "UNAUTHENTICATED" } });
    const whoValues = () =>
      client.frames.flatMap((m) => (m.type === "Transition" ? m.modifications.filter((mod) => mod.type === "QueryUpdated" && mod.queryId === who).map((mod) => (mod as { value: unknown }).value) : []));
    await eventually(() => whoValues().length === 3);
    expect(whoValues()).toEqual([null, "eve", null]);
    client.write({ type: "Action", requestId: 3, path: "users:echo", args: { text: "hi" } });
    expect(await client.next((m) => m.type === "ActionResponse")).toMatchObject({ success: true, value: "anonymous: hi" });
  });

  it("broadcasts a published event to the topic's listeners only, storing nothing", async () => {
    const f = await open();
    const [listener, elsewhere, publisher] = [f.client(), f.client(), f.client()];
    await Promise.all([listener, elsewhere, publisher].map((client) => client.connect()));
    listener.write({ type: "ModifyTopics", add: ["presence"], remove: [] });
    elsewhere.write({ type: "ModifyTopics", add: ["other"], remove: [] });
    const seqnoBefore = f.node.engine.position.nextSeqno;
    await new Promise((resolve) => setTimeout(resolve, 0));
    publisher.write({ type: "Publish", topic: "presence", event: { user: "ada", typing: true } });
    expect(await listener.next((m) => m.type === "Broadcast")).toEqual({ type: "Broadcast", topic: "presence", event: { user: "ada", typing: true } });
    expect(elsewhere.frames.some((frame) => frame.type === "Broadcast")).toBe(false);
    expect(f.node.engine.position.nextSeqno).toBe(seqnoBefore);
  });

  it("answers every bad frame with a typed error and keeps the session", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    client.writeRaw("{not json");
    expect(await client.next((m) => m.type === "ProtocolError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
    client.writeRaw(JSON.stringify({ type: "Mutation", requestId: 9, path: 5 }));
    expect(await client.next((m) => m.type === "ProtocolError")).toMatchObject({ requestId: 9, error: { code: "PROTOCOL_INVALID" } });
    client.writeRaw(JSON.stringify({ type: "Teleport" }));
    expect(await client.next((m) => m.type === "ProtocolError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
    expect(await client.mutate("nope:missing", {})).toMatchObject({ success: false, error: { code: "FUNCTION_NOT_FOUND" } });
    expect(await client.mutate("notes:add", { channel: 3 })).toMatchObject({ success: false, error: { code: "INVALID_ARGUMENT" } });
    expect(await client.mutate("notes:add", { channel: { $integer: "x" } })).toMatchObject({ success: false, error: { code: "VALUE_INVALID" } });
    expect(await client.mutate("notes:big", { chars: 1_100_000 })).toMatchObject({ success: false, error: { code: "VALUE_TOO_LARGE" } });
    const missing = await client.subscribe("nope:missing", {});
    expect(client.results.get(missing)).toMatchObject({ error: { code: "FUNCTION_NOT_FOUND" } });
    const bad = await client.subscribe("notes:list", { channel: 1 });
    expect(client.results.get(bad)).toMatchObject({ error: { code: "INVALID_ARGUMENT" } });
    client.write({ type: "Publish", topic: "t", event: { $bytes: "not base64!" } });
    expect(await client.next((m) => m.type === "ProtocolError")).toMatchObject({ error: { code: "VALUE_INVALID" } });
    // Still serving.
    const fine = await client.subscribe("notes:list", { channel: "ok" });
    expect(client.valueOf(fine)).toEqual([]);
    expect(client.closedWith).toBeNull();
    expect(client.versionMismatches).toEqual([]);
  });

  it("ends a connection whose first frame is not Connect, or whose query-set versions do not follow", async () => {
    const f = await open();
    const early = f.client();
    early.write({ type: "Mutation", requestId: 1, path: "counters:bump", args: { name: "x" } });
    expect(await early.next((m) => m.type === "FatalError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
    expect(early.closedWith?.code).toBe(4400);
    const skipping = f.client();
    await skipping.connect();
    skipping.write({ type: "ModifyQuerySet", baseVersion: 5, newVersion: 6, add: [], remove: [] });
    expect(await skipping.next((m) => m.type === "FatalError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
    expect(f.handler.sessionCount).toBe(0);
    expect((await f.runtime.runQuery("counters:get", { name: "x" })).value).toBe(0);
  });

  it("re-runs a failed query when what it read before failing changes", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    await client.mutate("notes:add", { channel: "s", body: "boom" });
    const strict = await client.subscribe("notes:strict", { channel: "s" });
    expect(client.results.get(strict)).toMatchObject({ error: { code: "FUNCTION_FAILED" } });
    const runsBefore = f.runs.get("notes:strict")!;
    const added = await client.mutate("notes:add", { channel: "s", body: "more" });
    await client.reachTs(added.ts!);
    // Re-run (its read range was kept from the failed run), still failing with the same error.
    expect(f.runs.get("notes:strict")).toBe(runsBefore + 1);
    expect(client.results.get(strict)).toMatchObject({ error: { code: "FUNCTION_FAILED" } });
    await client.mutate("notes:add", { channel: "unrelated", body: "x" });
    expect(f.runs.get("notes:strict")).toBe(runsBefore + 1);
  });
});

export type { ModelClient };
