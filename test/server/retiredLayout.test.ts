/**
 * Scenario: a replica (startNode, in this process) serves a one-shard deployment when a
 * reshard to two shards switches the layout under it (the writer stopped first, as the
 * reshard requires). The replica must notice (a shard manifest gone, a new writer — the
 * reshard — fencing it, or its periodic read of `globals`) and stop serving the retired
 * layout: every query and mutation fails with DEPLOYMENT_RESHARDED instead of answering
 * from the old copy, its sessions end, and /api/health says "stopped" and why. Real
 * directory bucket, SQLite files and HTTP.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FsObjectStore } from "../../src/objectstore/index.js";
import type { LayoutRetired } from "../../src/replica/LayoutWatcher.js";
import { reshardObjectStore } from "../../src/shard/reshardObjectStore.js";
import type { NodeOptions, RunningNode } from "../../src/server/startNode.js";
import { startSyncAppNode } from "./serverHarness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node(directory: string, name: string, overrides: Partial<NodeOptions> = {}): Promise<RunningNode> {
  const started = await startSyncAppNode(directory, name, overrides);
  cleanups.push(started.stop);
  return started;
}

async function call(target: RunningNode, kind: "query" | "mutation", path: string, args: Record<string, unknown>): Promise<{ value?: unknown; error?: { code: string; message: string } }> {
  const response = await fetch(new URL(`api/${kind}`, target.url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  return (await response.json()) as { value?: unknown; error?: { code: string; message: string } };
}

async function eventually(predicate: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString().slice(0, 200)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("a replica whose layout a reshard retired", () => {
  it("stops serving it: calls fail with DEPLOYMENT_RESHARDED, and health says stopped and why", async () => {
    const directory = mkdtempSync(join(tmpdir(), "cairn-retired-"));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const writer = await node(directory, "writer");
    expect((await call(writer, "mutation", "notes:add", { channel: "c", body: "a" })).error).toBeUndefined();
    const retirements: LayoutRetired[] = [];
    const replica = await node(directory, "replica", {
      role: "replica",
      tailer: { idlePollMs: 50, firstBackoffMs: 10, manifestRefreshMs: 200 },
      onLayoutRetired: (retired) => retirements.push(retired),
    });
    await eventually(async () => JSON.stringify((await call(replica, "query", "notes:list", { channel: "c" })).value) === JSON.stringify(["a"]));
    await writer.stop();

    const store = new FsObjectStore(join(directory, "bucket"));
    cleanups.push(() => store.close());
    const report = await reshardObjectStore({ store, toShards: 2, workDirectory: join(directory, "reshard") });
    expect(report.changed).toBe(true);

    await eventually(() => retirements.length > 0);
    expect(retirements[0]).toMatchObject({ openedGeneration: 0, currentGeneration: report.generation, numShards: 2 });
    expect(replica.layoutRetired()).not.toBeNull();
    const query = await call(replica, "query", "notes:list", { channel: "c" });
    expect(query.value).toBeUndefined();
    expect(query.error?.code).toBe("DEPLOYMENT_RESHARDED");
    expect(query.error?.message).toMatch(/resharded to 2 shard\(s\)/);
    expect((await call(replica, "mutation", "notes:add", { channel: "c", body: "b" })).error?.code).toBe("DEPLOYMENT_RESHARDED");
    const answer = await fetch(new URL("api/health", replica.url));
    // 503: a load balancer that checks only the status takes a stopped node out.
    expect(answer.status).toBe(503);
    const health = (await answer.json()) as { status: string; reason?: string };
    expect(health.status).toBe("stopped");
    expect(health.reason).toMatch(/layout generation 0 → \d+/);
  });
});
