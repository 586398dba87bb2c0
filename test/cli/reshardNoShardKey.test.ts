/**
 * Scenario: `cairn reshard --to 3` (a real child process) on a stopped one-shard
 * deployment whose app has no table with a shard key: every document lives on shard 0
 * under any shard count. The command says that nothing moves — instead of a progress
 * line for every empty new shard and a per-shard table of zeros — and the deployment has
 * its three shards with every document on shard 0.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { runCairn } from "../support/runCairn.js";
import * as syncApp from "../sync/syncApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-reshard-no-key-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bucket = join(root, "bucket");
const NOTES = 20;

describe("cairn reshard without shard keys", () => {
  it("says that nothing moves, and prints no progress for the empty new shards", { timeout: 60_000 }, async () => {
    const store = new FsObjectStore(bucket);
    const node = await ShardedStore.open({ store, localDirectory: join(root, "seed"), nodeId: "seed" });
    await node.acquireAll();
    const app = App.fromModule(syncApp, "sync test app");
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(store, app.schema, systemRandom), shards: { shards: node.engines, get readTs() { return node.readTs; } } });
    for (let i = 0; i < NOTES; i++) await runtime.runMutation("notes:add", { channel: "c", body: `n${i}` });
    await node.close();

    const run = await runCairn(["reshard", "--store", bucket, "--to", "3"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/no table of the app has a shard key: its documents stay on shard 0 and nothing of them moves between shards/);
    expect(run.stderr).not.toMatch(/new shard [23]\/3/);
    expect(run.stdout).toMatch(new RegExp(`resharded 1 → 3 shard\\(s\\): nothing moved: no table has a shard key, so all ${NOTES} document\\(s\\) stay on shard 0`));
    expect(run.stdout).not.toMatch(/^shard \d+: 0 document/m);
    expect((await globalsObject(store, systemRandom).read())!.value).toMatchObject({ numShards: 3 });
    await store.close();
  });
});
