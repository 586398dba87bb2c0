/**
 * Scenario: a bucket restored from an older copy under a running replica. A writer
 * commits "a"; the bucket is copied (the backup); a second writer takes over (a newer
 * epoch) and commits "b" and "c", which the replica applies. Then the bucket is replaced
 * by the backup while the replica keeps running: its local copy now holds an epoch and a
 * position the bucket never had. The replica must notice at its next manifest read,
 * rebuild its copy from the bucket in one step and serve the restored state ("a" only),
 * and then follow a new writer's commits ("d") — never keep serving "b" and "c", nor skip
 * the new writer's segments as leftovers; a live query on the replica follows too. Once with a snapshot in the backup (restored in
 * place), once without (the log replayed beside the copy). Real directory bucket, real
 * SQLite files, real HTTP.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { CasObject } from "../../src/manifest/CasObject.js";
import { manifestCodec } from "../../src/manifest/Manifest.js";
import { FsObjectStore } from "../../src/objectstore/index.js";
import type { EngineEvent } from "../../src/shard/ShardEngine.js";
import type { NodeOptions, RunningNode } from "../../src/server/startNode.js";
import { startSyncAppNode } from "./serverHarness.js";
import type { functions } from "../sync/syncApp.js";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";

const api = apiOf<typeof functions>();

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function workspace(): string {
  const directory = mkdtempSync(join(tmpdir(), "cairn-rollback-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

async function node(directory: string, name: string, overrides: Partial<NodeOptions> = {}): Promise<RunningNode> {
  const started = await startSyncAppNode(directory, name, overrides);
  cleanups.push(started.stop);
  return started;
}

async function call(node: RunningNode, kind: "query" | "mutation", path: string, args: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(new URL(`api/${kind}`, node.url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  const body = (await response.json()) as { value?: unknown; error?: { code: string; message: string } };
  if (body.error !== undefined) throw new Error(`${body.error.code}: ${body.error.message}`);
  return body.value;
}

const notes = (target: RunningNode) => call(target, "query", "notes:list", { channel: "c" }) as Promise<string[]>;

/** Polls until `predicate` holds; the deadline bounds a hang, it is no timing assertion. */
async function eventually(predicate: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString().slice(0, 200)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each([
  { name: "with a snapshot in the backup", engineTuning: { snapshotEverySegments: 1, maintenanceIntervalMs: 50 } },
  { name: "without a snapshot", engineTuning: {} },
])("a bucket rolled back under a running replica ($name)", ({ engineTuning }) => {
  it("is detected at the next manifest read, rebuilt, and serves the restored state and then new writes", async () => {
    const directory = workspace();
    const bucket = join(directory, "bucket");
    const first = await node(directory, "writer-1", { engineTuning });
    await call(first, "mutation", "notes:add", { channel: "c", body: "a" });
    if ("snapshotEverySegments" in engineTuning) {
      // The maintenance driver takes the snapshot on its own cadence.
      const manifest = new CasObject(new FsObjectStore(bucket), bucketLayout.manifest(0), manifestCodec, new SeededRandom(1));
      await eventually(async () => ((await manifest.read())?.value.snapshot?.seqno ?? -1) >= 1);
    }
    await first.stop();
    const backup = join(directory, "backup");
    cpSync(bucket, backup, { recursive: true });

    const second = await node(directory, "writer-2", { engineTuning });
    const events: EngineEvent[] = [];
    const replica = await node(directory, "replica", {
      role: "replica",
      tailer: { idlePollMs: 50, firstBackoffMs: 10, manifestRefreshMs: 200 },
      onEngineEvent: (event) => events.push(event),
    });
    // A live query on the replica, too: it must follow the rollback, not keep "b" and "c".
    const client = createNodeClient(`${replica.url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
    cleanups.push(() => client.close());
    let live: string[] | undefined;
    client.subscribe(api.notes.list, { channel: "c" }, (value) => (live = value));
    await call(second, "mutation", "notes:add", { channel: "c", body: "b" });
    await call(second, "mutation", "notes:add", { channel: "c", body: "c" });
    await eventually(async () => (await notes(replica)).length === 3 && live?.length === 3);
    await second.stop();

    // The restore from backup, while the replica runs.
    rmSync(bucket, { recursive: true, force: true });
    cpSync(backup, bucket, { recursive: true });

    await eventually(async () => JSON.stringify(await notes(replica)) === JSON.stringify(["a"]));
    await eventually(async () => JSON.stringify(live) === JSON.stringify(["a"]));
    const rebuilt = events.filter((event) => event.type === "local-rebuilt");
    expect(rebuilt.length).toBeGreaterThan(0);

    const third = await node(directory, "writer-3", { engineTuning });
    await call(third, "mutation", "notes:add", { channel: "c", body: "d" });
    await eventually(async () => JSON.stringify(await notes(replica)) === JSON.stringify(["a", "d"]));
    await eventually(async () => JSON.stringify(live) === JSON.stringify(["a", "d"]));
    expect(await notes(third)).toEqual(["a", "d"]);
  });
});
