/**
 * Scenarios: a writer node in this process on a directory bucket, reached over real
 * sockets — live updates over WebSocket, the HTTP API with its error statuses, JWT auth,
 * the admin key, health and Prometheus metrics, an unanswered ping, a binary frame, a
 * session past the node's limit (503), and a graceful stop that ends every session with
 * SERVER_STOPPING.
 */
import { SignJWT } from "jose";
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { HINT_SEGMENT_BYTES_MAX } from "../../src/base/index.js";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import { Gate, eventually } from "../support/Gate.js";
import { SocketClient, startTestNode } from "./serverHarness.js";

const SECRET = "a-test-secret-that-is-long-enough-for-hs256";
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node(overrides: Parameters<typeof startTestNode>[0] = {}) {
  const started = await startTestNode(overrides);
  cleanups.push(() => started.close());
  return started.node;
}

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(new URL(path, url), { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("the server", () => {
  it("pushes another client's mutation to a subscriber over WebSocket", async () => {
    const server = await node();
    const reader = await SocketClient.open(server.url);
    const writer = await SocketClient.open(server.url);
    cleanups.push(async () => (reader.close(), writer.close()));
    reader.write({ type: "Connect", sessionId: "r" });
    writer.write({ type: "Connect", sessionId: "w" });
    reader.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "live" } }], remove: [] });
    expect(await reader.next((m) => m.type === "Transition")).toMatchObject({ modifications: [{ type: "QueryUpdated", queryId: 1, value: [] }] });
    writer.write({ type: "Mutation", requestId: 1, path: "notes:add", args: { channel: "live", body: "over the wire" } });
    const response = await writer.next((m) => m.type === "MutationResponse");
    expect(response).toMatchObject({ success: true, value: 13 });
    const update = await reader.next((m) => m.type === "Transition");
    expect(update).toMatchObject({ modifications: [{ type: "QueryUpdated", queryId: 1, value: ["over the wire"] }] });
  });

  it("refuses a session past the node's limit with 503 and takes one again once a session ends", async () => {
    const server = await node({ sessionsMax: 2 });
    const first = await SocketClient.open(server.url);
    const second = await SocketClient.open(server.url);
    cleanups.push(async () => (first.close(), second.close()));
    await expect(SocketClient.open(server.url)).rejects.toThrow(/503/);
    // The sessions already held go on.
    first.write({ type: "Connect", sessionId: "held" });
    first.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "full" } }], remove: [] });
    expect(await first.next((m) => m.type === "Transition")).toMatchObject({ modifications: [{ type: "QueryUpdated", queryId: 1 }] });
    second.close();
    let third: SocketClient | null = null;
    for (let tries = 0; third === null; tries++) {
      third = await SocketClient.open(server.url).catch((error: Error) => {
        if (!/503/.test(error.message) || tries > 1_000) throw error;
        return null;
      });
      if (third === null) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    cleanups.push(async () => third!.close());
    expect((await fetch(new URL("/api/health", server.url))).status).toBe(200);
  });

  it("serves the HTTP API with a typed error and a fitting status for each bad request", async () => {
    const server = await node();
    expect(await post(server.url, "/api/mutation", { path: "notes:add", args: { channel: "h", body: "http" } })).toMatchObject({ status: 200, body: { value: 4 } });
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: "h" } })).toMatchObject({ status: 200, body: { value: ["http"] } });
    expect(await post(server.url, "/api/action", { path: "users:echo", args: { text: "yo" } })).toMatchObject({ status: 200, body: { value: "anonymous: yo" } });
    expect(await post(server.url, "/api/query", { path: "nope:none" })).toMatchObject({ status: 404, body: { error: { code: "FUNCTION_NOT_FOUND" } } });
    expect(await post(server.url, "/api/query", "{oops")).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: 1 } })).toMatchObject({ status: 400, body: { error: { code: "INVALID_ARGUMENT" } } });
    expect(await post(server.url, "/api/mutation", { path: "notes:fail" })).toMatchObject({ status: 500, body: { error: { code: "FUNCTION_FAILED", kind: "Internal" } } });
    expect(await post(server.url, "/api/mutation", "x".repeat(17 * 1024 * 1024))).toMatchObject({ status: 413, body: { error: { code: "MESSAGE_TOO_LARGE" } } });
    expect(await post(server.url, "/api/admin/query", { path: "notes:list", args: { channel: "h" } })).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    const missing = await fetch(new URL("/nowhere", server.url));
    expect(missing.status).toBe(404);
    // Still healthy after all of that.
    const health = (await (await fetch(new URL("/api/health", server.url))).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: "ok", role: "writer", stalenessMs: 0, shards: [{ shard: 0, state: "writing" }] });
  });

  it("verifies JWTs on both paths and refuses a bad one with UNAUTHENTICATED, keeping the session", async () => {
    const server = await node({ verifier: jwtVerifier({ secret: SECRET }) });
    const token = await new SignJWT({ name: "Ada" }).setProtectedHeader({ alg: "HS256" }).setSubject("ada").setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
    const forged = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("ada").sign(new TextEncoder().encode("another-secret-that-is-long-enough-too"));
    expect(await post(server.url, "/api/action", { path: "users:echo", args: { text: "hi" } }, { authorization: `Bearer ${token}` })).toMatchObject({ status: 200, body: { value: "ada: hi" } });
    expect(await post(server.url, "/api/action", { path: "users:echo", args: { text: "hi" } }, { authorization: `Bearer ${forged}` })).toMatchObject({ status: 401, body: { error: { code: "UNAUTHENTICATED" } } });
    const client = await SocketClient.open(server.url);
    cleanups.push(async () => client.close());
    client.write({ type: "Connect", sessionId: "auth" });
    client.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "users:whoami", args: {} }], remove: [] });
    await client.next((m) => m.type === "Transition");
    client.write({ type: "SetAuth", token });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: true, subject: "ada" });
    expect(await client.next((m) => m.type === "Transition")).toMatchObject({ modifications: [{ type: "QueryUpdated", value: "ada" }] });
    client.write({ type: "SetAuth", token: forged });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: false, error: { code: "UNAUTHENTICATED" } });
    expect(await client.next((m) => m.type === "Transition")).toMatchObject({ modifications: [{ type: "QueryUpdated", value: null }] });
    expect(client.closed).toBeNull();
  });

  it("lets the admin key call internal functions and see the node's status", async () => {
    const server = await node({ adminKey: "admin-secret" });
    const admin = { authorization: "Admin admin-secret" };
    expect(await post(server.url, "/api/admin/query", { path: "notes:list", args: { channel: "a" } }, { authorization: "Admin wrong" })).toMatchObject({ status: 403 });
    expect(await post(server.url, "/api/admin/mutation", { path: "notes:add", args: { channel: "a", body: "x" } }, admin)).toMatchObject({ status: 200, body: { value: 1 } });
    const status = await fetch(new URL("/api/admin/status", server.url), { headers: admin });
    expect(await status.json()).toMatchObject({ role: "writer", sync: { sessions: 0 } });
  });

  it("guards node-to-node calls with the admin key; runs forwarded calls as client calls with the identity given", async () => {
    const server = await node({ adminKey: "admin-secret", frontierWaitMs: 50 });
    const admin = { authorization: "Admin admin-secret" };
    const forwarded = { path: "notes:add", args: { channel: "f", body: "forwarded" }, identity: { subject: "alice" }, clientId: "replica-client", seq: 1 };
    expect(await post(server.url, "/api/internal/forward/mutation", forwarded)).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    expect(await post(server.url, "/api/internal/forward/mutation", forwarded, { authorization: "Admin wrong" })).toMatchObject({ status: 403 });
    const first = await post(server.url, "/api/internal/forward/mutation", forwarded, admin);
    expect(first).toMatchObject({ status: 200, body: { value: "forwarded".length } });
    // The receipt key travelled: a retry of a lost answer is answered from it, not run again.
    expect(await post(server.url, "/api/internal/forward/mutation", forwarded, admin)).toMatchObject({ status: 200, body: { value: "forwarded".length, replayed: true, ts: first.body["ts"] } });
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: "f" } })).toMatchObject({ body: { value: ["forwarded"] } });
    expect(await post(server.url, "/api/internal/forward/action", { path: "users:echo", args: { text: "hi" }, identity: { subject: "alice" } }, admin)).toMatchObject({ status: 200, body: { value: "alice: hi" } });
    expect(await post(server.url, "/api/internal/forward/action", { path: "users:whoami", args: {}, identity: { subject: "alice" } }, admin)).toMatchObject({ status: 404, body: { error: { code: "FUNCTION_NOT_FOUND" } } });
    expect(await post(server.url, "/api/internal/forward/query", { path: "notes:list", args: {}, identity: null }, admin)).toMatchObject({ status: 404 });
    expect(await post(server.url, "/api/internal/forward/mutation", { ...forwarded, identity: { subject: "" } }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    expect(await post(server.url, "/api/internal/forward/mutation", "{not json", admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });

    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3 }] })).toMatchObject({ status: 403 });
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3 }] }, admin)).toMatchObject({ status: 200 });
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: -1, seqno: 3 }] }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3, hash: "ab".repeat(32) }] }, admin)).toMatchObject({ status: 200 });
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 4, verifying: true }] }, admin)).toMatchObject({ status: 200 });
    expect(await post(server.url, "/api/internal/peer", { nodeId: "r1", url: "http://127.0.0.1:9/" })).toMatchObject({ status: 403 });
    expect(await post(server.url, "/api/internal/peer", { nodeId: "r1", url: "http://127.0.0.1:9/" }, admin)).toMatchObject({ status: 200 });
    for (const peer of [{ nodeId: "r:1", url: "http://127.0.0.1:9/" }, { nodeId: "r1", url: "ftp://x/" }, { nodeId: "r1" }, { nodeId: "r1", url: "http://x/", extra: 1 }]) {
      expect(await post(server.url, "/api/internal/peer", peer, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    }
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 4, verifying: false }] }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    for (const hash of ["AB".repeat(32), "ab".repeat(31), 42, null]) {
      expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3, hash }] }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    }
    // A segment's bytes travel in base64, only with the hash they vouch for, and at most HINT_SEGMENT_BYTES_MAX of them.
    const bytes = Buffer.from("not a segment: the tailer checks it against the hash and reads the slot").toString("base64");
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3, hash: "ab".repeat(32), segment: bytes }] }, admin)).toMatchObject({ status: 200 });
    for (const segment of ["not base64!", 42, "A".repeat(4 * Math.ceil(HINT_SEGMENT_BYTES_MAX / 3) + 4)]) {
      expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3, hash: "ab".repeat(32), segment }] }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    }
    expect(await post(server.url, "/api/internal/hint", { hints: [{ shard: 0, seqno: 3, segment: bytes }] }, admin)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });

    // A caller that has seen a ts this node has not reached is told so rather than served older data.
    const ahead = Number(first.body["ts"]) + 1_000_000;
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: "f" }, minTs: ahead })).toMatchObject({ status: 503, body: { error: { code: "REPLICA_BEHIND" } } });
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: "f" }, minTs: first.body["ts"] })).toMatchObject({ status: 200, body: { value: ["forwarded"] } });
  });

  it("runs forwarded mutations on a peer socket opened with the admin key, answering each by id, and takes hints on it; refuses the socket without the key and closes it on a frame that is neither", async () => {
    const server = await node({ adminKey: "admin-secret" });
    const socketUrl = new URL("/api/internal/peer-socket", server.url.replace(/^http/, "ws"));
    const refusal = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const socket = new WebSocket(socketUrl, { headers });
        socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
        socket.on("open", () => reject(new Error("the socket opened")));
        socket.on("error", () => resolve(-1));
      });
    expect(await refusal({})).toBe(403);
    expect(await refusal({ authorization: "Admin wrong" })).toBe(403);

    const socket = new WebSocket(socketUrl, { headers: { authorization: "Admin admin-secret" } });
    cleanups.push(async () => socket.terminate());
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const answers = new Map<number, { status: number; body: Record<string, unknown> }>();
    socket.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as { id: number; status: number; body: Record<string, unknown> };
      answers.set(frame.id, frame);
    });
    const forwarded = { path: "notes:add", args: { channel: "s", body: "by socket" }, identity: { subject: "alice" }, clientId: "socket-client", seq: 1 };
    socket.send(JSON.stringify({ id: 1, call: forwarded }));
    socket.send(JSON.stringify({ id: 2, call: forwarded })); // the same receipt key: answered from the receipt
    socket.send(JSON.stringify({ id: 3, call: { ...forwarded, path: 42 } }));
    socket.send(JSON.stringify({ id: 4, call: { path: "users:whoami", args: {}, identity: null } }));
    await eventually(() => answers.size === 4);
    expect(answers.get(1)).toMatchObject({ status: 200, body: { value: "by socket".length } });
    expect(answers.get(2)!.body["ts"]).toBe(answers.get(1)!.body["ts"]);
    expect(answers.get(3)).toMatchObject({ status: 400, body: { error: { code: "PROTOCOL_INVALID" } } });
    expect(answers.get(4)).toMatchObject({ status: 404, body: { error: { code: "FUNCTION_NOT_FOUND" } } });
    expect(await post(server.url, "/api/query", { path: "notes:list", args: { channel: "s" } })).toMatchObject({ body: { value: ["by socket"] } });

    // Hints are taken without an answer; the socket goes on carrying calls.
    socket.send(JSON.stringify({ hints: [{ shard: 0, seqno: 3, hash: "ab".repeat(32), segment: Buffer.from("checked against the hash").toString("base64") }] }));
    socket.send(JSON.stringify({ id: 5, call: { ...forwarded, clientId: "socket-client-2" } }));
    await eventually(() => answers.size === 5);
    expect(answers.get(5)).toMatchObject({ status: 200 });

    for (const bad of ["{not a frame", JSON.stringify({ hints: [{ shard: -1, seqno: 3 }] }), JSON.stringify({ id: "x", call: forwarded })]) {
      const again = new WebSocket(socketUrl, { headers: { authorization: "Admin admin-secret" } });
      cleanups.push(async () => again.terminate());
      await new Promise((resolve, reject) => again.once("open", resolve).once("error", reject));
      const closed = new Promise<number>((resolve) => again.once("close", (code) => resolve(code)));
      again.send(bad);
      expect(await closed, bad).toBe(1008);
    }
  });

  it("exports Prometheus metrics for commits, flushes, store calls and sessions", async () => {
    const server = await node();
    const client = await SocketClient.open(server.url);
    cleanups.push(async () => client.close());
    client.write({ type: "Connect", sessionId: "m" });
    await client.next((m) => m.type === "ConnectAck");
    await post(server.url, "/api/mutation", { path: "notes:add", args: { channel: "m", body: "counted" } });
    const text = await (await fetch(new URL("/metrics", server.url))).text();
    expect(text).toMatch(/^cairn_commits_total\{shard="0"\} 1$/m);
    expect(text).toMatch(/^cairn_segments_written_total\{shard="0",kind="data"\} 1$/m);
    expect(text).toMatch(/^cairn_flush_units_count 1$/m);
    expect(text).toMatch(/^cairn_mutation_duration_seconds_count 1$/m);
    expect(text).toMatch(/^cairn_store_requests_total\{operation="create",outcome="ok"\} \d+$/m);
    expect(text).toMatch(/^cairn_sync_sessions 1$/m);
    expect(text).toMatch(/^cairn_sync_dropped_frames_total 0$/m);
  });

  it("reaps a connection that stops answering pings and sending, keeps one that sends, and answers a binary frame with a typed error", async () => {
    const server = await node({ pingIntervalMs: 20 });
    const binary = await SocketClient.open(server.url);
    cleanups.push(async () => binary.close());
    binary.socket.send(Buffer.from([1, 2, 3]));
    expect(await binary.next((m) => m.type === "ProtocolError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
    const silent = await SocketClient.open(server.url, { autoPong: false });
    silent.write({ type: "Connect", sessionId: "silent" });
    await silent.whenClosed();
    expect(silent.closed?.code).toBe(4408);
    await eventually(() => server.handler.sessionCount === 1);
    // Any frame is a sign of life: a client that answers no ping but keeps sending stays,
    // over many more ping rounds than a silent one lasts; once it stops sending, it is reaped.
    const busy = await SocketClient.open(server.url, { autoPong: false });
    cleanups.push(async () => busy.close());
    busy.write({ type: "Connect", sessionId: "busy" });
    for (let frame = 0; frame < 30; frame++) {
      busy.write({ type: "ModifyQuerySet", baseVersion: frame, newVersion: frame + 1, add: [], remove: [] });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(busy.closed).toBeNull();
    await busy.whenClosed();
    expect(busy.closed?.code).toBe(4408);
  });

  it("stops gracefully: running requests finish, then every session gets SERVER_STOPPING and close 1001", async () => {
    const started = await startTestNode();
    const client = await SocketClient.open(started.node.url);
    client.write({ type: "Connect", sessionId: "s" });
    await client.next((m) => m.type === "ConnectAck");
    // The mutation's segment is held at the bucket while the stop begins: a request in flight.
    const gate = new Gate();
    started.store.inject({ operations: ["create"], keyPattern: /\/log\//, once: true, effect: { until: gate.promise } });
    client.write({ type: "Mutation", requestId: 1, path: "notes:add", args: { channel: "s", body: "last" } });
    await eventually(() => started.store.held === 1);
    const stopped = started.close();
    gate.open();
    expect(await client.next((m) => m.type === "MutationResponse")).toMatchObject({ success: true });
    expect(await client.next((m) => m.type === "FatalError")).toMatchObject({ error: { code: "SERVER_STOPPING" } });
    await client.whenClosed();
    expect(client.closed?.code).toBe(1001);
    await stopped;
  });
});

describe("a reader whose socket stops reading", () => {
  it("is resynced over a real socket once it reads again, with the server's queue bounded meanwhile", async () => {
    const server = await node();
    const slow = await SocketClient.open(server.url);
    const writer = await SocketClient.open(server.url);
    cleanups.push(async () => (slow.close(), writer.close()));
    slow.write({ type: "Connect", sessionId: "slow" });
    writer.write({ type: "Connect", sessionId: "writer" });
    slow.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "big" } }], remove: [] });
    await slow.next((m) => m.type === "Transition");
    // The client stops reading: the kernel's buffers fill, then the server's queue.
    (slow.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    let peakQueued = 0;
    const notes = 60;
    for (let n = 1; n <= notes; n++) {
      writer.write({ type: "Mutation", requestId: n, path: "notes:add", args: { channel: "big", body: `${n}:${"x".repeat(60_000)}` } });
      await writer.next((m) => m.type === "MutationResponse" && m.requestId === n);
      peakQueued = Math.max(peakQueued, server.handler.stats().queuedFrames);
    }
    const stats = server.handler.stats();
    expect(stats.droppedFrames).toBeGreaterThan(0);
    expect(peakQueued).toBeLessThanOrEqual(201);
    (slow.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    const last = () => slow.frames.filter((m) => m.type === "Transition").at(-1) as Extract<typeof slow.frames[number], { type: "Transition" }> | undefined;
    await eventually(() => {
      const value = last()?.modifications.find((m) => m.type === "QueryUpdated")?.value as string[] | undefined;
      return value?.length === notes;
    }, 100_000);
    // Every Transition it got starts where the previous one ended.
    const transitions = slow.frames.filter((m) => m.type === "Transition");
    for (let at = 1; at < transitions.length; at++) expect(transitions[at]!.startVersion).toEqual(transitions[at - 1]!.endVersion);
  });
});
