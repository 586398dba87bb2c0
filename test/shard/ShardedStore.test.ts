/**
 * Scenario: one node opens a two-shard deployment: the globals fix the shard count,
 * each shard gets its own engine and SQLite file (all under one overlay budget), one
 * hybrid clock orders commits across shards, and closing relinquishes every lease so
 * another node takes over at once.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { SCHEMA_VERSION } from "../../src/local/index.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { insertUnit } from "../support/shardHarness.js";

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function localDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "cairn-sharded-"));
  directories.push(directory);
  return directory;
}

describe("ShardedStore", () => {
  it("opens every shard, orders commits across shards by one clock, and hands over on close", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const random = new SeededRandom(1);
    const first = await ShardedStore.open({ store, localDirectory: localDirectory(), nodeId: "n1", numShards: 2, clock, random });
    expect(first.numShards).toBe(2);
    // One overlay budget for the node, not one per shard.
    expect(first.engine(0).local.overlayBudget).toBe(first.engine(1).local.overlayBudget);
    await first.acquireAll();
    const zero = first.engine(0);
    const one = first.engine(1);
    const a = await zero.commit(insertUnit(zero, newDocumentId(1, random), { shard: 0 }));
    const b = await one.commit(insertUnit(one, newDocumentId(1, random), { shard: 1 }));
    expect(b.ts).toBeGreaterThan(a.ts);
    // Both shards' writers are idle: each is complete up to the node's clock, so every
    // read may see both commits (shard 0's own last segment is older than b).
    // (A tick shard 0 sends after b, stamped above it, holds no data and moves nothing back.)
    expect(zero.readTs).toBe(a.ts);
    expect(first.readTs).toBeGreaterThanOrEqual(b.ts);
    expect(first.readTs).toBeLessThanOrEqual(Math.max(zero.closedTs, one.closedTs));
    await first.close();

    const second = await ShardedStore.open({ store, localDirectory: localDirectory(), nodeId: "n2", clock, random });
    expect(second.deploymentId).toBe(first.deploymentId);
    await second.acquireAll();
    expect(second.engines.map((engine) => engine.state.kind)).toEqual(["writing", "writing"]);
    expect(second.engine(1).readTs).toBeGreaterThan(b.ts);
    await second.close();
    await expect(
      ShardedStore.open({ store, localDirectory: localDirectory(), nodeId: "n3", numShards: 3, clock, random }),
    ).rejects.toMatchObject({ code: "DEPLOYMENT_MISMATCH" });
  });

  it("rebuilds a local copy of an older schema from the bucket, and refuses one of a newer schema unchanged", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const random = new SeededRandom(2);
    const directory = localDirectory();
    const first = await ShardedStore.open({ store, localDirectory: directory, nodeId: "n1", numShards: 1, clock, random });
    await first.acquireAll();
    const id = newDocumentId(1, random);
    const { ts } = await first.engine(0).commit(insertUnit(first.engine(0), id, { kept: true }));
    await first.close();
    const [file] = readdirSync(directory, { recursive: true }).map(String).filter((name) => name.endsWith(".sqlite"));
    const path = join(directory, file!);

    setSchemaVersion(path, SCHEMA_VERSION - 1);
    const events: string[] = [];
    const second = await ShardedStore.open({
      store,
      localDirectory: directory,
      nodeId: "n2",
      clock,
      random,
      onEvent: (event) => events.push(event.type),
    });
    expect(events).toContain("local-rebuilt");
    expect(second.local(0).get(id, ts)).toEqual({ value: '{"kept":true}', ts });
    await second.close();

    setSchemaVersion(path, SCHEMA_VERSION + 1);
    const before = readFileSync(path);
    await expect(ShardedStore.open({ store, localDirectory: directory, nodeId: "n3", clock, random })).rejects.toMatchObject({
      code: "LOCAL_SCHEMA_UNSUPPORTED",
    });
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});

function setSchemaVersion(path: string, version: number): void {
  const raw = new Database(path);
  raw.prepare("UPDATE meta SET schema_version = ?").run(version);
  raw.pragma("wal_checkpoint(TRUNCATE)");
  raw.close();
}
