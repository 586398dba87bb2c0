/**
 * Scenario: `cairn reshard --to N` as a user runs it, in real child processes over a
 * directory bucket: SIGKILLed after it wrote part of the new layout, the deployment is
 * still the old one (a server would serve it), and a re-run (once the dead run's lock and
 * leases expire) converges, deleting the half-written generation; `cairn serve` started
 * after it serves the new layout with every document, and `cairn verify` finds no
 * problem. A live server makes it refuse.
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
import { runCairn, type CairnRun } from "../support/runCairn.js";
import { spawnCairnServe } from "../support/spawnCairnServe.js";
import * as shardedApp from "../functions/shardedApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-reshard-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bucket = join(root, "bucket");
const CHANNELS = Array.from({ length: 16 }, (_, i) => `channel-${i}`);
const PER_CHANNEL = 250;

/** `cairn …` in a child; with `killWhen`, SIGKILLed as soon as its stderr matches. */
function cairn(args: string[], killWhen?: RegExp): Promise<CairnRun> {
  return runCairn(args, killWhen === undefined ? undefined : { stream: "stderr", pattern: killWhen, signal: "SIGKILL" });
}

async function globals() {
  const store = new FsObjectStore(bucket);
  try {
    return (await globalsObject(store, systemRandom).read())!.value;
  } finally {
    await store.close();
  }
}

describe("cairn reshard", () => {
  it("survives a SIGKILL midway: the old layout stays, a re-run converges, and a server serves the new layout", { timeout: 120_000 }, async () => {
    // A stopped 2-shard deployment of 4,000 messages.
    const store = new FsObjectStore(bucket);
    const node = await ShardedStore.open({ store, localDirectory: join(root, "seed"), nodeId: "seed", numShards: 2 });
    await node.acquireAll();
    const app = App.fromModule(shardedApp, "sharded test app");
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(store, app.schema, systemRandom), shards: { shards: node.engines, get readTs() { return node.readTs; } } });
    for (const [i, channel] of CHANNELS.entries()) await runtime.runMutation("messages:sendMany", { channel, from: i * PER_CHANNEL, count: PER_CHANNEL });
    const expected = (await runtime.runQuery("messages:byN", { order: "asc", take: 10_000 })).value as number[];
    expect(expected).toHaveLength(CHANNELS.length * PER_CHANNEL);
    await node.close();
    await store.close();

    // Killed once the first new shard is written: the switch has not happened.
    const killed = await cairn(["reshard", "--store", bucket, "--to", "3", "--lock-ttl-ms", "2000"], /new shard 1\/3 written/);
    expect(killed.signal).toBe("SIGKILL");
    expect(await globals()).toMatchObject({ numShards: 2, generation: 0, highestGeneration: 1 });

    // The dead run's lock and leases block a re-run until they expire; then it converges.
    let rerun: CairnRun;
    for (let attempt = 0; ; attempt++) {
      rerun = await cairn(["reshard", "--store", bucket, "--to", "3", "--lock-ttl-ms", "2000"]);
      if (rerun.code === 0 || attempt >= 20 || !/RESHARD_IN_PROGRESS|LEASE_HELD/.test(rerun.stderr)) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(rerun.stderr).not.toMatch(/cairn: \[/);
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).toMatch(/resharded 2 → 3 shard\(s\): 4000 document\(s\) in layout generation 2/);
    expect(await globals()).toMatchObject({ numShards: 3, generation: 2, retired: [], reshard: null });
    const left = new FsObjectStore(bucket);
    const keys: string[] = [];
    for await (const entry of left.list("")) keys.push(entry.key);
    await left.close();
    expect(keys.filter((key) => !key.startsWith("g2/") && !["globals", "schema"].includes(key) && !key.startsWith("nodes/"))).toEqual([]);

    const verify = await cairn(["verify", "--store", bucket]);
    expect(verify.stdout).toMatch(/3 shard\(s\) \(layout generation 2\)/);
    expect(verify.stdout).toMatch(/verify: no problems found/);
    expect(verify.code).toBe(0);

    // A server started now serves the new layout: every message, and new writes.
    const serve = await spawnCairnServe(["--store", bucket, "--local", join(root, "local"), "--app", "test/functions/shardedApp.ts", "--port", "0"]);
    try {
      const call = async (kind: string, path: string, args: unknown) => {
        const response = await fetch(new URL(`api/${kind}`, serve.url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
        return (await response.json()) as { value?: unknown; error?: unknown };
      };
      expect(serve.output).toMatch(/functions run on 3 shard\(s\)/);
      expect((await call("query", "messages:byN", { order: "asc", take: 10_000 })).value).toEqual(expected);
      expect((await call("mutation", "messages:send", { channel: "channel-3", n: 99_999, body: "after" })).error).toBeUndefined();
      expect((await call("query", "messages:inChannel", { channel: "channel-3" })).value).toEqual([
        ...Array.from({ length: PER_CHANNEL }, (_, k) => 3 * PER_CHANNEL + k),
        99_999,
      ]);
      // While it writes, a reshard is refused and changes nothing.
      const refused = await cairn(["reshard", "--store", bucket, "--to", "2"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/\[LEASE_HELD\] shard 0 has a live writer/);
      expect(await globals()).toMatchObject({ numShards: 3, generation: 2 });
    } finally {
      serve.child.kill("SIGINT");
      await new Promise((resolve) => serve.child.once("close", resolve));
    }
  });
});
