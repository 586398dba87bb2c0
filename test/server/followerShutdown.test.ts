/**
 * Scenario: a writer and a replica (`cairn serve` processes over one directory bucket).
 * Clients write through the replica — HTTP calls and a WebSocket session — while the
 * writer is frozen (SIGSTOP), so every one of those writes is in flight at the replica,
 * forwarded and waiting for the writer's answer. The replica then gets SIGTERM; once it
 * says it is stopping, the writer resumes.
 *
 * What must hold: the stopping replica finishes the forwarded writes in flight — every
 * client gets its write's successful answer (before, the HTTP calls were cut) — each
 * write is applied exactly once, and the replica prints "stopped" and exits 0 (before, it
 * lingered ~10 s after "stopped", waiting for writes it had cut).
 *
 * And past the drain's bound: a forward still waiting for a writer that does not answer
 * (a socket that never responds) when its node stops is abandoned at once, its caller
 * told that the outcome is unknown and given the receipt key, and nothing waits on.
 */
import { PeerClient } from "../../src/fleet/index.js";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { systemClock } from "../../src/base/clock.js";
import { WriteForwarder } from "../../src/server/WriteForwarder.js";
import { ServeProcess } from "./serveProcess.js";

const ADMIN_KEY = "follower-shutdown-admin-key";
const HTTP_WRITES = 6;
const SESSION_WRITES = 3;

const root = mkdtempSync(join(tmpdir(), "cairn-follower-shutdown-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const processes: ServeProcess[] = [];
afterEach(async () => {
  for (const process of processes.splice(0)) {
    process.resume();
    await process.kill();
  }
});

async function serve(name: string, extra: readonly string[] = []): Promise<ServeProcess> {
  const started = await ServeProcess.start(
    ["--store", join(root, "bucket"), "--local", join(root, name), "--app", "test/sync/syncApp.ts", "--port", "0", ...extra],
    { CAIRN_ADMIN_KEY: ADMIN_KEY },
  );
  processes.push(started);
  return started;
}

async function until(what: string, predicate: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One HTTP mutation with a receipt key: its status and body, or how the connection failed. */
async function httpWrite(url: string, body: string, seq: number): Promise<string> {
  try {
    const response = await fetch(`${url}api/mutation`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path: "notes:add", args: { channel: "shutdown", body }, clientId: "http-writer", seq }),
    });
    return `${response.status} ${JSON.stringify(await response.json())}`;
  } catch (error) {
    return `failed: ${(error as Error).message} (${String((error as { cause?: { code?: string } }).cause?.code)})`;
  }
}

/** A raw protocol session that sends `bodies` as mutations and collects their answers by requestId. */
function sessionWrites(url: string, bodies: readonly string[]): { sent: Promise<void>; answers: Map<number, unknown>; closed: Promise<void> } {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}api/sync`);
  const answers = new Map<number, unknown>();
  socket.on("message", (data) => {
    const message = JSON.parse(data.toString()) as { type: string; requestId?: number };
    if (message.type === "MutationResponse") answers.set(message.requestId!, message);
  });
  const sent = new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.once("open", () => {
      socket.send(JSON.stringify({ type: "Connect", sessionId: "shutdown-session", clientId: "session-writer" }));
      bodies.forEach((body, seq) =>
        socket.send(JSON.stringify({ type: "Mutation", requestId: seq + 1, path: "notes:add", args: { channel: "shutdown", body }, clientId: "session-writer", seq })),
      );
      resolve();
    });
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { sent, answers, closed };
}

/** Notes of the test's channel, read on `node`. */
async function notes(node: ServeProcess): Promise<string[]> {
  const listed = await fetch(`${node.url}api/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ path: "notes:list", args: { channel: "shutdown" } }),
  });
  return [...((await listed.json()) as { value: string[] }).value].sort();
}

/**
 * Freezes the writer, runs `send` (writes through the replica, all left in flight),
 * SIGTERMs the replica, and resumes the writer once the replica says it is stopping.
 * Resolves with the replica's exit code.
 */
async function stopReplicaWhileForwarding(writer: ServeProcess, replica: ServeProcess, send: () => Promise<void>): Promise<number | null> {
  writer.pause();
  await send();
  // Setup, not a measurement: give the requests time to reach the replica and be forwarded.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const exited = replica.stop();
  await until("the replica says it is stopping", () => /stopping/.test(replica.output));
  writer.resume();
  return exited;
}

describe("a follower stopped while it forwards writes", () => {
  it("finishes the forwarded writes in flight, each applied once, then stops and exits", { timeout: 90_000 }, async () => {
    const writer = await serve("writer");
    const expected = ["warm-up"];

    // HTTP calls.
    const first = await serve("replica-1", ["--replica"]);
    // The replica forwards to the writer (and has applied its first commit).
    expect(await httpWrite(first.url, "warm-up", 0)).toMatch(/^200 /);
    const httpBodies = Array.from({ length: HTTP_WRITES }, (_, i) => `http-${i}`);
    let httpAnswers: Promise<string>[] = [];
    const firstExit = await stopReplicaWhileForwarding(writer, first, async () => {
      httpAnswers = httpBodies.map((body, i) => httpWrite(first.url, body, i + 1));
    });
    for (const answer of await Promise.all(httpAnswers)) expect(answer).toMatch(/^200 \{"value":\d+,"ts":\d+/);
    expect(firstExit).toBe(0);
    expect(first.output).toMatch(/cairn: stopped/);
    expected.push(...httpBodies);

    // A WebSocket session.
    const second = await serve("replica-2", ["--replica"]);
    const sessionBodies = Array.from({ length: SESSION_WRITES }, (_, i) => `session-${i}`);
    let session: ReturnType<typeof sessionWrites> | null = null;
    const secondExit = await stopReplicaWhileForwarding(writer, second, async () => {
      session = sessionWrites(second.url, sessionBodies);
      await session.sent;
    });
    await session!.closed;
    for (let requestId = 1; requestId <= SESSION_WRITES; requestId++) {
      expect(session!.answers.get(requestId), `session mutation ${requestId}`).toMatchObject({ type: "MutationResponse", success: true });
    }
    expect(secondExit).toBe(0);
    expect(second.output).toMatch(/cairn: stopped/);
    expected.push(...sessionBodies);

    // Each write applied exactly once (read on the writer).
    expect(await notes(writer)).toEqual(expected.sort());
    expect(await writer.stop()).toBe(0);
  });
});

describe("a forwarder whose node stops", () => {
  it("abandons a forward the writer never answers, saying the outcome is unknown, and starts no other", { timeout: 30_000 }, async () => {
    // A writer that takes the request and never answers.
    let received = false;
    const silent: Server = createServer(() => {
      received = true;
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}/`;
    const forwarder = new WriteForwarder({
      peers: new PeerClient({ adminKey: ADMIN_KEY }),
      selfNodeId: "replica",
      clock: systemClock,
      writer: () => ({ nodeId: "writer", url }),
      refreshWriter: async () => ({ nodeId: "writer", url }),
    });
    try {
      const call = { path: "notes:add", args: { channel: "c", body: "x" }, identity: null, clientId: "c1", seq: 7 };
      const attempt = forwarder.attemptMutation(call, 60_000, false);
      const routeChange = forwarder.routeChange(60_000);
      await until("the writer has the request", () => received);
      forwarder.close();
      expect(await attempt).toMatchObject({ kind: "failure", failure: { outcomeUnknown: true, final: true, reason: "abandoned: this node is stopping" } });
      await routeChange;
      expect(await forwarder.attemptMutation(call, 60_000, false)).toMatchObject({ kind: "failure", failure: { outcomeUnknown: false, final: true } });
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
