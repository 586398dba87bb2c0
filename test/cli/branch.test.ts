/**
 * Scenario: `cairn branch` as a user runs it, in real child processes over directory
 * buckets: a branch at an ISO moment holds that moment's state, passes `cairn verify`,
 * is listed in its parent with its expiry, renewed, and deleted (its own objects only);
 * bad moments, ttls, names and targets are refused with a clear message and nothing written.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { openObjectStore, type ObjectStore } from "../../src/objectstore/index.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { runCairn } from "../support/runCairn.js";
import { notesIn } from "./historyNotes.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-branch-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const app = App.fromModule(historyApp, "history test app");
let directories = 0;

async function keysOf(bucket: string, prefix = ""): Promise<string[]> {
  const store: ObjectStore = await openObjectStore(bucket);
  const keys: string[] = [];
  for await (const entry of store.list(prefix)) keys.push(entry.key);
  await store.close();
  return keys;
}

describe("cairn branch", () => {
  it("branches at an ISO moment, lists, renews and deletes the branch, and refuses bad input", { timeout: 120_000 }, async () => {
    const bucket = join(root, "bucket");
    const store = await openObjectStore(bucket);
    const node = await ShardedStore.open({ store, localDirectory: join(root, "seed"), nodeId: "seed", numShards: 2 });
    await node.acquireAll();
    const runtime = await shardedRuntime(node, store, app, systemRandom);
    const ids: string[] = [];
    for (let n = 0; n < 120; n++) ids.push((await runtime.runMutation("notes:add", { channel: `c${n % 7}`, n, body: `note ${n}` })).value as string);
    await node.engines[0]!.snapshotNow();
    const asWritten = ((await runtime.runQuery("notes:all", {})).value as { channel: string; n: number; body: string }[]).map((note) => `${note.channel}/${note.n}: ${note.body}`).sort();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const isoMoment = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (let n = 0; n < 120; n += 4) await runtime.runMutation("notes:remove", { id: ids[n]!, channel: `c${n % 7}` });
    await node.close();
    await store.close();
    const parentKeys = await keysOf(bucket);

    const branchDir = join(root, "preview");
    const created = await runCairn(["branch", "--store", bucket, "--at", isoMoment, "--to", branchDir, "--ttl", "1h", "--name", "preview"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/branched deployment [0-9a-f]{32} at .* into .*preview: new deployment [0-9a-f]{32}, branch "preview"/);
    expect(created.stdout).toMatch(/shard 0: shares the parent's snapshot at seqno \d+/);
    expect(await notesIn(branchDir, root)).toEqual(asWritten);
    const verified = await runCairn(["verify", "--store", branchDir]);
    expect(verified.code, `${verified.stdout}\n${verified.stderr}`).toBe(0);

    expect((await runCairn(["inspect", "--store", branchDir])).stdout).toMatch(/a branch \("preview"\) of deployment [0-9a-f]{32} at .*bucket, forked at /);
    const listed = await runCairn(["branch", "list", "--store", bucket]);
    expect(listed.stdout).toMatch(/^preview: .*preview, forked at .*, held until .*, ttl 1h$/m);
    const renewed = await runCairn(["branch", "renew", "--store", branchDir, "--ttl", "2h"]);
    expect(renewed.stdout).toMatch(/branch "preview": its parent keeps what it reads until .* \(ttl 2h\)/);

    // Bad input: nothing written anywhere.
    for (const [args, message] of [
      [["--at", "yesterday"], /expected an ISO 8601 date-time/],
      [["--at", isoMoment, "--ttl", "0"], /expected a duration above 0/],
      [["--at", isoMoment, "--name", "Not A Name!"], /INVALID_ARGUMENT.*branch id must match/],
      [["--at", "2001-01-01T00:00:00Z"], /RESTORE_OUT_OF_RANGE.*before deployment/],
    ] as const) {
      const target = join(root, `refused-${directories++}`);
      const refused = await runCairn(["branch", "--store", bucket, "--to", target, ...args]);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toMatch(message);
      expect(await keysOf(target)).toEqual([]);
    }
    const busy = await runCairn(["branch", "--store", bucket, "--at", isoMoment, "--to", branchDir]);
    expect(busy.stderr).toMatch(/RESTORE_TARGET_NOT_EMPTY/);
    const notBranch = await runCairn(["branch", "delete", "--store", bucket]);
    expect(notBranch.stderr).toMatch(/is not a branch/);
    expect((await keysOf(bucket)).filter((key) => !key.startsWith("branches/")), "the parent is untouched").toEqual(parentKeys);

    const deleted = await runCairn(["branch", "delete", "--store", branchDir]);
    expect(deleted.stdout).toMatch(/deleted branch "preview" \(deployment [0-9a-f]{32}\): \d+ object\(s\) of its own; nothing of its parent/);
    expect(await keysOf(branchDir)).toEqual([]);
    expect(await keysOf(bucket)).toEqual(parentKeys);
    expect((await runCairn(["branch", "list", "--store", bucket])).stdout).toMatch(/no branches registered/);
  });
});
