/**
 * Scenario: queries at a past ts (DESIGN.md §10a, issue 28 item 4) through the functions
 * runtime on a two-shard node: every shard answers as of that ts (documents and index
 * entries, deletes included), and once the node pruned its local history past it, the
 * read is refused with LOCAL_HISTORY_UNAVAILABLE saying where the window starts and what
 * rebuilds older states, never answered from a later state.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-past-reads-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const app = App.fromModule(historyApp, "history test app");

describe("queries at a past ts", () => {
  it("answer as of that ts on every shard, and are refused clearly once the node's history no longer reaches it", async () => {
    const store = new MemoryObjectStore();
    const sharded = await ShardedStore.open({ store, localDirectory: root, nodeId: "past", numShards: 2, tuning: { historyRetentionMs: 1 } });
    try {
      await sharded.acquireAll();
      const runtime = await shardedRuntime(sharded, store, app, systemRandom);
      const ids: string[] = [];
      for (let n = 0; n < 12; n++) ids.push((await runtime.runMutation("notes:add", { channel: `c${n % 4}`, n, body: `v1 of ${n}` })).value as string);
      const then = (await runtime.runQuery("notes:all", {})).readTs;
      const atThen = (await runtime.runQuery("notes:all", {})).value;
      for (let n = 0; n < 12; n += 2) await runtime.runMutation("notes:remove", { id: ids[n]!, channel: `c${n % 4}` });
      for (let n = 1; n < 12; n += 2) await runtime.runMutation("notes:renumber", { id: ids[n]!, channel: `c${n % 4}`, n: 100 + n });

      const past = await runtime.runQuery("notes:all", {}, { readTs: then });
      expect(past.readTs).toBe(then);
      expect(past.value).toEqual(atThen);
      expect((past.value as unknown[]).length).toBe(12);
      expect((await runtime.runQuery("notes:inChannel", { channel: "c1" }, { readTs: then })).value).toEqual([1, 5, 9]);
      expect((await runtime.runQuery("notes:inChannel", { channel: "c1" })).value).toEqual([101, 105, 109]);

      // The node prunes what is older than its window (1 ms here): the past is then refused, not answered from the present.
      await new Promise((resolve) => setTimeout(resolve, 5));
      for (const engine of sharded.engines) await engine.pruneLocal();
      const error = await runtime.runQuery("notes:all", {}, { readTs: then }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: "LOCAL_HISTORY_UNAVAILABLE" });
      expect((error as Error).message).toMatch(/local history of it starts at ts \d+ .*cairn restore/);
      expect(((await runtime.runQuery("notes:all", {})).value as unknown[]).length).toBe(6);
    } finally {
      await sharded.close();
    }
  });
});
