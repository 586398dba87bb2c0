/**
 * Scenario: a real node in a child process is sent random and mutated HTTP requests
 * (methods, targets, headers, tokens, admin keys, forwarded and internal bodies) and
 * random and mutated WebSocket frames (every client message, mutated JSON, random text,
 * deep nesting, multi-byte text, binary frames) for a bounded number of cases
 * (CAIRN_FUZZ_RUNS for more). After every case the process is alive; at the end another
 * session's live query still updates, and the heap after a full collection is back
 * within FUZZ_HEAP_GROWTH_BYTES_MAX of where it was.
 */
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ProbedServer } from "./ProbedServer.js";
import { SocketClient } from "./serverHarness.js";

const RUNS = Number(process.env.CAIRN_FUZZ_RUNS ?? 120);
/**
 * Growth allowed once everything is answered and collected: bounded caches that fill as
 * fuzz commits land (recent commits, receipts, shared runs, compiled code). Generous;
 * a leak per request or per session (hundreds of cases) shows far above it.
 */
const FUZZ_HEAP_GROWTH_BYTES_MAX = 48 * 1024 * 1024;
/** A case's sockets are cleaned up after this (a bound on the test, never an assertion). */
const CASE_GIVE_UP_MS = 10_000;
const ADMIN_KEY = "probe-admin-key";

let probed: ProbedServer;
let observer: SocketClient;
let observed = 0;

beforeAll(async () => {
  probed = await ProbedServer.start();
  observer = await SocketClient.open(probed.url);
  observer.write({ type: "Connect", sessionId: "observer" });
  observer.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "observed" } }], remove: [] });
  await observer.next((m) => m.type === "Transition");
});
afterAll(async () => {
  observer?.close();
  await probed?.stop();
});

/** The observer's live query follows a commit made by another session. */
async function observerStillUpdates(): Promise<void> {
  const writer = await SocketClient.open(probed.url);
  try {
    const body = `seen ${++observed}`;
    writer.write({ type: "Connect", sessionId: `writer-${observed}` });
    writer.write({ type: "Mutation", requestId: 1, path: "notes:add", args: { channel: "observed", body } });
    expect(await writer.next((m) => m.type === "MutationResponse")).toMatchObject({ success: true });
    await observer.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && (mod.value as string[]).includes(body)));
  } finally {
    writer.close();
  }
}

// ---- generators ------------------------------------------------------------------------

const paths = fc.oneof(
  fc.constantFrom("notes:list", "notes:add", "notes:fail", "notes:strict", "counters:get", "counters:bump", "users:whoami", "users:echo"),
  fc.string({ maxLength: 40 }),
);
const smallTs = fc.nat({ max: 3 });
/** Arguments nested `depth` arrays deep, as text (fast-check's own printing recurses on such values). */
const deepArgs = fc.integer({ min: 1, max: 100_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`);
const args = fc.oneof(
  fc.record({ channel: fc.string({ unit: "grapheme", maxLength: 30 }), body: fc.string({ maxLength: 30 }) }, { requiredKeys: [] }),
  fc.record({ name: fc.string({ maxLength: 10 }) }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constant({ $bytes: "not base64!" }),
);
const text = fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: "grapheme", maxLength: 60 }), fc.string({ unit: "binary", maxLength: 60 }));
const counter = fc.oneof(fc.nat({ max: 50 }), fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 2));

const clientFrames = fc.oneof(
  fc.record({ type: fc.constant("Connect"), sessionId: text, clientId: text, held: fc.array(fc.nat({ max: 20 }), { maxLength: 5 }), ackedThrough: smallTs, maxObservedTs: smallTs }, { requiredKeys: ["type", "sessionId"] }),
  fc.record({
    type: fc.constant("ModifyQuerySet"),
    baseVersion: fc.nat({ max: 3 }),
    newVersion: fc.nat({ max: 4 }),
    add: fc.array(fc.record({ queryId: counter, path: paths, args }), { maxLength: 4 }),
    remove: fc.array(counter, { maxLength: 4 }),
  }),
  fc.record({ type: fc.constant("Mutation"), requestId: counter, path: paths, args, clientId: text, seq: counter }, { requiredKeys: ["type", "requestId", "path", "args"] }),
  fc.record({ type: fc.constant("MutationBatch"), entries: fc.array(fc.record({ requestId: counter, path: paths, args }), { maxLength: 4 }) }),
  fc.record({ type: fc.constant("Action"), requestId: counter, path: paths, args }),
  fc.record({ type: fc.constant("SetAuth"), token: fc.oneof(text, fc.constant(null), fc.constant("a.b.c")) }),
  fc.record({ type: fc.constant("Publish"), topic: text, event: args }),
  fc.record({ type: fc.constant("ModifyTopics"), add: fc.array(text, { maxLength: 3 }), remove: fc.array(text, { maxLength: 3 }) }),
  fc.record({ type: text }),
);

/** JSON text with a few characters inserted, deleted or replaced. */
function mutated(json: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc
    .tuple(json.map((value) => JSON.stringify(value)), fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.string({ unit: "binary", maxLength: 4 })), { minLength: 1, maxLength: 3 }))
    .map(([source, edits]) => edits.reduce((edited, [at, cut, insert]) => {
      const position = at % (edited.length + 1);
      return edited.slice(0, position) + insert + edited.slice(position + cut);
    }, source));
}

type WsFrame = { readonly text: string } | { readonly binary: Uint8Array };
const wsFrames: fc.Arbitrary<WsFrame> = fc.oneof(
  { weight: 4, arbitrary: clientFrames.map((frame) => ({ text: JSON.stringify(frame) })) },
  { weight: 3, arbitrary: mutated(clientFrames).map((edited) => ({ text: edited })) },
  { weight: 1, arbitrary: fc.oneof(text, fc.json()).map((random) => ({ text: random })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom("Mutation", "Action", "Publish"), deepArgs).map(([type, nested]) => ({ text: `{"type":"${type}","requestId":1,"path":"notes:add","topic":"t","args":${nested},"event":${nested}}` })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((binary) => ({ binary })) },
);

const callBodies = fc.oneof(
  fc.record({ path: paths, args, clientId: text, seq: counter, minTs: smallTs }, { requiredKeys: ["path"] }),
  fc.record({ path: paths, args, identity: fc.oneof(fc.constant(null), fc.record({ subject: text })) }),
  fc.record({ hints: fc.array(fc.record({ shard: counter, seqno: counter, hash: text }), { maxLength: 3 }) }),
  fc.jsonValue({ maxDepth: 3 }),
);
const httpRequests = fc.record({
  method: fc.oneof(fc.constantFrom("GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"), fc.stringMatching(/^[A-Z]{1,8}$/)),
  target: fc.oneof(
    fc.constantFrom("/api/query", "/api/mutation", "/api/action", "/api/admin/query", "/api/admin/status", "/api/internal/forward/mutation", "/api/internal/forward/action", "/api/internal/hint", "/api/internal/peer", "/api/health", "/metrics", "/api/sync", "/", "//[", "/%", "/api/%ZZ", "*", "http://[::1"),
    fc.stringMatching(/^\/[\x21-\x7e]{0,30}$/),
  ),
  authorization: fc.oneof(fc.constant(null), fc.constant(`Admin ${ADMIN_KEY}`), text.map((token) => `Bearer ${token}`), fc.stringMatching(/^[\x20-\x7e]{0,40}$/)),
  upgrade: fc.boolean(),
  extraHeaders: fc.array(fc.tuple(fc.stringMatching(/^[a-zA-Z-]{1,12}$/), fc.stringMatching(/^[\x20-\x7e]{0,30}$/)), { maxLength: 3 }),
  body: fc.oneof(callBodies.map((body) => JSON.stringify(body)), mutated(callBodies), text, deepArgs.map((nested) => `{"path":"notes:add","args":${nested}}`)),
  lengthSkew: fc.oneof(fc.constant(0), fc.integer({ min: -5, max: 5 }), fc.constant(null)),
});

// ---- senders ---------------------------------------------------------------------------

type HttpRequest = typeof httpRequests extends fc.Arbitrary<infer T> ? T : never;

function rawRequest(request: HttpRequest): Promise<void> {
  const { hostname, port } = new URL(probed.url);
  const body = Buffer.from(request.body);
  const headers = [`Host: ${hostname}`, "Connection: close"];
  if (request.authorization !== null) headers.push(`Authorization: ${request.authorization}`);
  if (request.upgrade) headers.push("Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13");
  for (const [name, value] of request.extraHeaders) headers.push(`${name}: ${value}`);
  if (request.lengthSkew !== null) headers.push(`Content-Length: ${Math.max(0, body.byteLength + request.lengthSkew)}`);
  const head = `${request.method} ${request.target} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n`;
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
      socket.end();
    });
    const giveUp = setTimeout(() => socket.destroy(), CASE_GIVE_UP_MS);
    socket.on("data", () => undefined);
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve();
    });
  });
}

/** Opens a socket, sends the frames, then a sentinel Action; resolves on its answer or the socket's close. */
async function frameSession(connectFirst: boolean, frames: readonly WsFrame[]): Promise<void> {
  const socket = new WebSocket(`${probed.url.replace(/^http/, "ws")}api/sync`);
  socket.on("error", () => undefined);
  const done = new Promise<void>((resolve) => {
    const giveUp = setTimeout(() => socket.terminate(), CASE_GIVE_UP_MS);
    socket.on("message", (data) => {
      if (data.toString().includes('"requestId":987654')) socket.close();
    });
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve();
    });
  });
  const opened = await new Promise<boolean>((resolve) => {
    socket.once("open", () => resolve(true));
    socket.once("close", () => resolve(false));
  });
  if (opened) {
    if (connectFirst) socket.send(JSON.stringify({ type: "Connect", sessionId: "fuzz" }));
    for (const frame of frames) socket.send("text" in frame ? frame.text : frame.binary, { binary: !("text" in frame) });
    socket.send(JSON.stringify({ type: "Action", requestId: 987654, path: "users:echo", args: { text: "sentinel" } }));
  }
  await done;
}

// ---- the properties ---------------------------------------------------------------------

describe("fuzzing a live node", () => {
  it("stays up, keeps other sessions working and returns to its heap level", async () => {
    // Warm up every path once, so the baseline holds what is compiled and cached lazily.
    await fc.assert(fc.asyncProperty(httpRequests, rawRequest), { numRuns: 10, seed: 1 });
    await fc.assert(fc.asyncProperty(fc.boolean(), fc.array(wsFrames, { maxLength: 6 }), frameSession), { numRuns: 10, seed: 1 });
    await observerStillUpdates();
    const baseline = await probed.heapUsed();

    await fc.assert(
      fc.asyncProperty(httpRequests, async (request) => {
        await rawRequest(request);
        expect(probed.alive, probed.log).toBe(true);
      }),
      // The server is not reset between cases: shrinking would only replay later cases on a dead process.
      { numRuns: RUNS, endOnFailure: true },
    );
    await observerStillUpdates();
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(wsFrames, { maxLength: 8 }), async (connectFirst, frames) => {
        await frameSession(connectFirst, frames);
        expect(probed.alive, probed.log).toBe(true);
      }),
      // The server is not reset between cases: shrinking would only replay later cases on a dead process.
      { numRuns: RUNS, endOnFailure: true },
    );
    await observerStillUpdates();

    const growth = (await probed.heapUsed()) - baseline;
    expect(probed.alive, probed.log).toBe(true);
    expect(growth, `heap grew by ${(growth / 1024 / 1024).toFixed(1)} MiB`).toBeLessThan(FUZZ_HEAP_GROWTH_BYTES_MAX);
  });
});
