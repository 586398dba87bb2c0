/**
 * Scenario: real `cairn serve` processes over a directory bucket — a writer of a 2-shard
 * deployment and a replica. The replica reads every query at the minimum of the shards'
 * closed frontiers, so a commit on one shard reaches its subscribers only once the other,
 * idle, shard has closed past it: the writer's idle shard ticks for the replica (which
 * announced itself at start), a query over both shards on the replica shows each commit,
 * and a mutation sent to the replica goes to the writer of its shard.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { laneOfValue } from "../../src/functions/routing.js";
import { ServeProcess } from "./serveProcess.js";
import { SocketClient } from "./serverHarness.js";

const ADMIN_KEY = "sharded-replica-test-admin-key";
const root = mkdtempSync(join(tmpdir(), "cairn-sharded-replica-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const processes: ServeProcess[] = [];
const sockets: SocketClient[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.close();
  for (const process of processes.splice(0)) await process.kill();
});

async function serve(local: string, extra: readonly string[]): Promise<ServeProcess> {
  const started = await ServeProcess.start(
    ["--store", join(root, "bucket"), "--local", join(root, local), "--app", "test/functions/shardedApp.ts", "--port", "0", ...extra],
    { CAIRN_ADMIN_KEY: ADMIN_KEY },
  );
  processes.push(started);
  return started;
}

async function post(url: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(new URL(path, url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("a replica of a 2-shard deployment", () => {
  it("sees a commit on either shard while the other is idle, and forwards a mutation to its shard's writer", async () => {
    const writer = await serve("writer", ["--shards", "2"]);
    const replica = await serve("replica", ["--replica"]);
    const [onZero, onOne] = [0, 1].map((lane) => Array.from({ length: 20 }, (_, i) => `c${i}`).find((channel) => laneOfValue(channel, 2) === lane)!);
    const reader = await SocketClient.open(replica.url);
    sockets.push(reader);
    reader.write({ type: "Connect", sessionId: "r" });
    reader.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "messages:byN", args: { order: "asc", take: 10 } }], remove: [] });
    await reader.next((m) => m.type === "Transition");
    const sees = (expected: number[]) => reader.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && JSON.stringify(mod.value) === JSON.stringify(expected)));

    // A commit on shard 0; shard 1 commits nothing: only its tick lets the replica's frontier pass.
    expect(await post(writer.url, "/api/mutation", { path: "messages:send", args: { channel: onZero, n: 1, body: "zero" } })).toMatchObject({ status: 200 });
    await sees([1]);
    expect(await post(writer.url, "/api/mutation", { path: "messages:send", args: { channel: onOne, n: 2, body: "one" } })).toMatchObject({ status: 200 });
    await sees([1, 2]);
    // Sent to the replica: run on shard 1's writer, answered once the replica has it.
    const forwarded = await post(replica.url, "/api/mutation", { path: "messages:send", args: { channel: onOne, n: 3, body: "via the replica" } });
    expect(forwarded).toMatchObject({ status: 200 });
    expect(await post(replica.url, "/api/query", { path: "messages:byN", args: { order: "asc", take: 10 } })).toMatchObject({ body: { value: [1, 2, 3] } });
    const health = (await (await fetch(new URL("/api/health", replica.url))).json()) as { role: string; shards: { appliedSeqno: number }[] };
    expect(health.role).toBe("replica");
    expect(health.shards).toHaveLength(2);
  });
});
