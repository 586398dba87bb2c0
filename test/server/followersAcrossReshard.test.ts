/**
 * Scenario: a real `cairn serve --replica` process follows a one-shard deployment while
 * `cairn reshard` moves it to two shards (the writer stopped first, as a reshard
 * requires). First the reshard refuses with NODES_LIVE, naming the live replica, and
 * changes nothing; with --allow-live-followers it goes ahead. The replica must stop
 * serving the retired layout and re-open on the new one, on the same port: it never
 * answers from the old copy after it noticed (every answer is the data, the same in both
 * layouts, or DEPLOYMENT_RESHARDED while it re-opens), its health names the new layout,
 * and a write a new writer makes on the new layout reaches it. Real processes, a real
 * directory bucket, real HTTP.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { runCairn } from "../support/runCairn.js";
import { ServeProcess } from "./serveProcess.js";

const ADMIN_KEY = "reshard-followers-admin-key";
const root = mkdtempSync(join(tmpdir(), "cairn-followers-reshard-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bucket = join(root, "bucket");

const processes: ServeProcess[] = [];
afterEach(async () => {
  for (const process of processes.splice(0)) await process.kill();
});

async function serve(local: string, extra: readonly string[] = []): Promise<ServeProcess> {
  const started = await ServeProcess.start(["--store", bucket, "--local", join(root, local), "--app", "test/sync/syncApp.ts", "--port", "0", ...extra], { CAIRN_ADMIN_KEY: ADMIN_KEY });
  processes.push(started);
  return started;
}

async function call(url: string, kind: "query" | "mutation", path: string, args: Record<string, unknown>): Promise<{ value?: unknown; error?: { code: string; message: string } }> {
  const response = await fetch(new URL(`api/${kind}`, url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  return (await response.json()) as { value?: unknown; error?: { code: string; message: string } };
}

async function health(url: string): Promise<{ status: string; reason?: string; shards?: unknown[] } | null> {
  try {
    return (await (await fetch(new URL("api/health", url))).json()) as { status: string; reason?: string; shards?: unknown[] };
  } catch {
    return null; // Between the retired node's close and the new node's listen.
  }
}

/** Polls until `predicate` holds; the deadline bounds a hang (the processes' output then says why), it is no timing assertion. */
async function eventually(predicate: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString().slice(0, 200)}\n${processes.map((process) => process.output).join("\n----\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function generation(): Promise<number> {
  const store = new FsObjectStore(bucket);
  try {
    return (await globalsObject(store, systemRandom).read())!.value.generation;
  } finally {
    await store.close();
  }
}

describe("followers across a reshard", () => {
  it("cairn reshard refuses while a replica is live; once it runs, the replica re-opens on the new layout and never serves the old one", { timeout: 120_000 }, async () => {
    const writer = await serve("writer");
    for (const body of ["a", "b"]) expect((await call(writer.url, "mutation", "notes:add", { channel: "c", body })).error).toBeUndefined();
    const replica = await serve("replica", ["--replica", "--node-id", "replica-1", "--poll-interval-ms", "100"]);
    await eventually(async () => JSON.stringify((await call(replica.url, "query", "notes:list", { channel: "c" })).value) === JSON.stringify(["a", "b"]));
    expect(await writer.stop()).toBe(0);

    const refused = await runCairn(["reshard", "--store", bucket, "--to", "2"]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/\[NODES_LIVE\] 1 node\(s\) of the deployment are registered live: replica-1 \(replica at http/);
    expect(await generation()).toBe(0);

    const resharded = await runCairn(["reshard", "--store", bucket, "--to", "2", "--allow-live-followers"]);
    expect(resharded.stderr).not.toMatch(/cairn: \[/);
    expect(resharded.code, resharded.stderr).toBe(0);
    const newGeneration = await generation();
    expect(newGeneration).toBeGreaterThan(0);

    // Until it re-opened, every answer is the (unchanged) data or a refusal that says why.
    const seen = new Set<string>();
    await eventually(async () => {
      const answer = await call(replica.url, "query", "notes:list", { channel: "c" }).catch(() => null);
      if (answer !== null) seen.add(answer.error?.code ?? JSON.stringify(answer.value));
      const state = await health(replica.url);
      return state !== null && state.status !== "stopped" && state.shards?.length === 2;
    });
    for (const answer of seen) expect(["DEPLOYMENT_RESHARDED", JSON.stringify(["a", "b"])], replica.output).toContain(answer);
    expect(replica.output).toMatch(/resharded to 2 shard\(s\) \(layout generation 0 → \d+\)/);
    // Printed once the re-opened node listens, which health may see first.
    await eventually(async () => /re-opened on the new layout/.test(replica.output));

    // The new layout's writer commits; the replica serves it.
    const newWriter = await serve("writer-2");
    expect((await call(newWriter.url, "mutation", "notes:add", { channel: "c", body: "c" })).error).toBeUndefined();
    await eventually(async () => JSON.stringify((await call(replica.url, "query", "notes:list", { channel: "c" })).value) === JSON.stringify(["a", "b", "c"]));
  });
});
