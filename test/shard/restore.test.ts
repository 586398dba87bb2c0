/**
 * Scenario: retention and `restoreObjectStore` (DESIGN.md §10a) on real engines, SQLite
 * files and an in-memory bucket, the S3 test endpoint or (when CAIRN_TEST_S3_URL names
 * one) a real S3 server.
 *
 * A two-shard deployment lives through a seeded history of inserts, edits, renumberings
 * (an index entry moves) and deletes, several at once so that segments hold several
 * commits, with snapshots and GC passes (a short retention window) at random moments.
 * Restores at random timestamps — exact commit timestamps, just before them, and inside
 * segments — are compared with a model of the history: each either equals the model's
 * state at that ts, documents and index entries, or is refused as outside the window,
 * and every ts inside the window of the last GC pass is restorable. A restore killed
 * midway leaves a target that nodes refuse, and a re-run finishes it; bad input is
 * refused with nothing changed. GC racing a restore — truncating the log it reads, or
 * collecting the base snapshot whose parts it merges last — makes it refuse
 * (RESTORE_OUT_OF_RANGE, target empty) or be exact, never restore a half-read state.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { randomInt, SeededRandom, systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { HeldReshardLock } from "../../src/manifest/ReshardLock.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { PrefixedObjectStore } from "../../src/objectstore/PrefixedObjectStore.js";
import type { GarbageReport } from "../../src/gc/collectGarbage.js";
import { exportDeployment } from "../../src/shard/exportDeployment.js";
import { restoreInPlace } from "../../src/shard/restoreInPlace.js";
import { restoreObjectStore, type RestoreReport } from "../../src/shard/restoreObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { readSnapshotRecords } from "../../src/snapshots/SnapshotRecords.js";
import { BUCKET_FACTORIES, memoryBucket } from "../support/bucketFactories.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "./historyApp.js";
import { randomChange, stateAt, timestampsInsideSegments, type Change, type Note } from "./historyModel.js";

const root = mkdtempSync(join(tmpdir(), "cairn-restore-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let directories = 0;
const freshDirectory = () => join(root, `d${directories++}`);

const app = App.fromModule(historyApp, "history test app");
const CHANNELS = ["a", "b", "c", "d", "e", "f", "g"];
const SHARDS = 2;
/** Short enough that the history outlives it: GC collects, and early timestamps leave the window. */
const RETENTION_MS = 1_200;
const SPACING_MS = 250;

interface History {
  readonly changes: readonly Change[];
  /** The cutoff of the last GC pass (µs): every ts at or after it must be restorable. */
  readonly lastCutoffTs: number;
  /** Timestamps strictly inside some segment (a commit below and one above it in the same segment). */
  readonly insideSegments: readonly number[];
  readonly snapshotsTaken: number;
  readonly collected: { readonly segmentsDeleted: number; readonly snapshotObjectsDeleted: number };
}

async function openNode(store: ObjectStore, tuning: Record<string, number> = {}): Promise<{ sharded: ShardedStore; runtime: FunctionRuntime }> {
  const sharded = await ShardedStore.open({ store, localDirectory: freshDirectory(), nodeId: `node-${directories}`, numShards: SHARDS, tuning });
  try {
    await sharded.acquireAll();
    return { sharded, runtime: await shardedRuntime(sharded, store, app, systemRandom) };
  } catch (error) {
    await sharded.close();
    throw error;
  }
}

/**
 * Lives through `rounds` rounds of 1–6 concurrent mutations, with snapshots and GC passes
 * between them, then stops the node gracefully. With `outliveWindow`, halfway through every
 * shard snapshots and the history waits out the retention window, and it ends with a GC
 * pass: the log before that snapshot is then collected whatever the machine's speed.
 */
async function liveHistory(store: ObjectStore, seed: number, rounds: number, outliveWindow = false): Promise<History> {
  const random = new SeededRandom(seed);
  const { sharded, runtime } = await openNode(store, { retentionMs: RETENTION_MS, retainedSnapshotSpacingMs: SPACING_MS });
  const changes: Change[] = [];
  const live = new Map<DocumentId, Note>();
  let lastCutoffTs = 0;
  let snapshotsTaken = 0;
  const collected = { segmentsDeleted: 0, snapshotObjectsDeleted: 0 };
  let n = 0;
  try {
    const collect = async () => {
      for (const engine of sharded.engines) {
        const nowMs = systemClock.nowMs();
        const report = await engine.collectGarbageNow({ sweep: randomInt(random, 2) === 0 });
        lastCutoffTs = Math.max(lastCutoffTs, (nowMs - RETENTION_MS) * 1000);
        collected.segmentsDeleted += report.segmentsDeleted;
        collected.snapshotObjectsDeleted += report.snapshotObjectsDeleted;
      }
    };
    for (let round = 0; round < rounds; round++) {
      if (outliveWindow && round === Math.floor(rounds / 2)) {
        for (const engine of sharded.engines) if ((await engine.snapshotNow()) !== null) snapshotsTaken++;
        await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 300));
      }
      const touched = new Set<DocumentId>();
      const batch = Array.from({ length: 1 + randomInt(random, 6) }, async () => changes.push(await randomChange(runtime, random, live, touched, round, CHANNELS, () => n++)));
      await Promise.all(batch);
      const step = randomInt(random, 10);
      if (step < 3) {
        if ((await sharded.engines[randomInt(random, SHARDS)]!.snapshotNow()) !== null) snapshotsTaken++;
      } else if (step < 5) {
        await collect();
      }
      await new Promise((resolve) => setTimeout(resolve, randomInt(random, 40)));
    }
    if (outliveWindow) await collect();
  } finally {
    await sharded.close();
  }
  return { changes: changes.sort((a, b) => a.ts - b.ts), lastCutoffTs, insideSegments: await timestampsInsideSegments(store, SHARDS), snapshotsTaken, collected };
}

/** What a writer of the (restored) deployment answers: every note (through the cross-shard index) and each channel's ns (through the shard-key index). */
async function answersOf(store: ObjectStore): Promise<{ notes: Note[]; channels: number[][] }> {
  const sharded = await ShardedStore.open({ store, localDirectory: freshDirectory(), nodeId: `reader-${directories}`, mustExist: true });
  try {
    // As the writer: it reads at its own fence, above every shard's last commit (a follower
    // reads at the shards' common closed frontier, held back by a shard idle since before the others' last commits).
    await sharded.acquireAll();
    const runtime = await shardedRuntime(sharded, store, app, systemRandom);
    const notes = ((await runtime.runQuery("notes:all", {})).value as unknown as Note[]).sort((a, b) => (a.id < b.id ? -1 : 1));
    const channels: number[][] = [];
    for (const channel of CHANNELS) channels.push(((await runtime.runQuery("notes:inChannel", { channel })).value as number[]).sort((a, b) => a - b));
    return { notes, channels };
  } finally {
    await sharded.close();
  }
}

function expectedAnswers(notes: readonly Note[]): { notes: Note[]; channels: number[][] } {
  return {
    notes: [...notes],
    channels: CHANNELS.map((channel) =>
      notes
        .filter((note) => note.channel === channel)
        .map((note) => note.n)
        .sort((a, b) => a - b),
    ),
  };
}

function codeOfError(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

describe.each(BUCKET_FACTORIES)("retention and restore on $name", (factory) => {
  it("restores exactly the state at random timestamps (exact, just before, inside segments); outside the window is refused", async () => {
    const bucket = await factory.open();
    try {
      const source = new PrefixedObjectStore(bucket.store, "source/");
      const history = await liveHistory(source, 7, factory === memoryBucket ? 60 : 36, true);
      // The history outlived the window: GC collected log and snapshots, and took snapshots to keep.
      expect(history.snapshotsTaken).toBeGreaterThan(0);
      expect(history.collected.segmentsDeleted).toBeGreaterThan(0);
      expect(history.insideSegments.length).toBeGreaterThan(0);

      const random = new SeededRandom(11);
      const stamps = history.changes.map((change) => change.ts);
      const samples = factory === memoryBucket ? 10 : 5;
      const targets = new Set<number>([
        stamps[0]! - 1,
        stamps.at(-1)!,
        stamps.at(-1)! + 1,
        ...Array.from({ length: samples }, () => stamps[randomInt(random, stamps.length)]!),
        ...Array.from({ length: samples }, () => stamps[randomInt(random, stamps.length)]! - 1),
        ...history.insideSegments.slice(-3),
      ]);
      let restored = 0;
      let refused = 0;
      let fromSnapshots = 0;
      let index = 0;
      for (const atTs of [...targets].sort((a, b) => a - b)) {
        const target = new PrefixedObjectStore(bucket.store, `restored-${index++}/`);
        let report: RestoreReport;
        try {
          report = await restoreObjectStore({ source, target, atTs, workDirectory: freshDirectory() });
        } catch (error) {
          expect(codeOfError(error), `restore at ${atTs}: ${String(error)}`).toBe("RESTORE_OUT_OF_RANGE");
          // Only what the window let go may be refused, and the target holds nothing.
          expect(atTs).toBeLessThan(history.lastCutoffTs);
          for await (const entry of target.list("")) expect.fail(`a refused restore left ${entry.key}`);
          refused++;
          continue;
        }
        expect(report.restored).toBe(true);
        if (report.shards.some((shard) => shard.baseSeqno !== null)) fromSnapshots++;
        expect(await answersOf(target), `state at ${atTs}`).toEqual(expectedAnswers(stateAt(history.changes, atTs)));
        restored++;
      }
      expect(restored).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
      expect(fromSnapshots).toBeGreaterThan(0);
      // The source is untouched by all of it: still the history's last state.
      expect(await answersOf(source)).toEqual(expectedAnswers(stateAt(history.changes, Number.MAX_SAFE_INTEGER)));
    } finally {
      await bucket.close();
    }
  }, 180_000);

  it("exports the state at a ts document for document, one folder per table, and the present by default", async () => {
    const bucket = await factory.open();
    try {
      const source = new PrefixedObjectStore(bucket.store, "source/");
      const history = await liveHistory(source, 13, 24);
      const stamps = history.changes.map((change) => change.ts);
      const random = new SeededRandom(3);
      for (const atTs of [stamps[randomInt(random, stamps.length)]!, history.insideSegments.at(-1)!, undefined]) {
        const folder = freshDirectory();
        const report = await exportDeployment({ source, to: folder, workDirectory: freshDirectory(), ...(atTs === undefined ? {} : { atTs }) });
        const expected = stateAt(history.changes, atTs ?? Number.MAX_SAFE_INTEGER);
        if (atTs === undefined) expect(report.atTs).toBeGreaterThanOrEqual(stamps.at(-1)!);
        const manifest = JSON.parse(readFileSync(join(folder, "cairn-export.json"), "utf8"));
        expect(manifest).toMatchObject({ format: 1, atTs: report.atTs, numShards: SHARDS, tables: expected.length === 0 ? [] : [{ name: "notes", documents: expected.length }] });
        expect(manifest.catalog.tables.map((table: { name: string }) => table.name)).toEqual(["notes", "_scheduled_functions", "_storage"]);
        const lines = expected.length === 0 ? [] : readFileSync(join(folder, "notes", "documents.jsonl"), "utf8").trimEnd().split("\n");
        const exported = lines.map((line) => JSON.parse(line) as Note & { _id: DocumentId; _creationTime: number });
        for (const document of exported) expect(typeof document._creationTime).toBe("number");
        expect(exported.map(({ _id, channel, n, body }) => ({ id: _id, channel, n, body })).sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual(expected);
        // Nothing left beside it: the temporary folder was renamed.
        expect(readdirSync(dirname(folder)).filter((name) => name.includes("partial"))).toEqual([]);
      }
      const taken = freshDirectory();
      mkdirSync(taken);
      await expect(exportDeployment({ source, to: taken })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(exportDeployment({ source, to: freshDirectory(), atTs: stamps[0]! - 10_000_000 })).rejects.toMatchObject({ code: "RESTORE_OUT_OF_RANGE" });
    } finally {
      await bucket.close();
    }
  }, 120_000);

  it("a restore killed midway leaves a target nodes refuse; a re-run finishes it, a different restore is refused", async () => {
    const bucket = await factory.open();
    try {
      const source = new PrefixedObjectStore(bucket.store, "source/");
      const history = await liveHistory(source, 3, 12);
      const atTs = history.changes.at(-1)!.ts;
      const faulty = new FaultyObjectStore(new PrefixedObjectStore(bucket.store, "target/"), new SeededRandom(1), systemClock);
      // Killed after shard 0 was written, before shard 1's manifest.
      faulty.inject({ operations: ["create"], keyPattern: /^s1\/manifest$/, once: true, effect: "unreachable" });
      await expect(restoreObjectStore({ source, target: faulty, atTs })).rejects.toThrow();
      expect((await faulty.get(bucketLayout.manifest(0))) !== null).toBe(true);
      await expect(ShardedStore.open({ store: faulty, localDirectory: freshDirectory(), nodeId: "early" })).rejects.toMatchObject({ code: "RESTORE_UNFINISHED" });
      await expect(restoreObjectStore({ source, target: faulty, atTs: atTs - 1 })).rejects.toMatchObject({ code: "RESTORE_UNFINISHED" });

      // Killed after globals, before the mark was removed: the restore stands.
      faulty.inject({ operations: ["delete"], keyPattern: /^restoring$/, once: true, effect: "unreachable" });
      await expect(restoreObjectStore({ source, target: faulty, atTs })).rejects.toThrow();
      const rerun = await restoreObjectStore({ source, target: faulty, atTs });
      expect(rerun.restored).toBe(false);
      expect(await faulty.get(bucketLayout.restoring())).toBeNull();
      expect(await answersOf(faulty)).toEqual(expectedAnswers(stateAt(history.changes, atTs)));

      // A finished target holds a deployment.
      await expect(restoreObjectStore({ source, target: faulty, atTs: atTs - 1 })).rejects.toMatchObject({ code: "RESTORE_TARGET_NOT_EMPTY" });
    } finally {
      await bucket.close();
    }
  }, 120_000);
});

describe.each(BUCKET_FACTORIES)("in-place restore on $name", (factory) => {
  it("makes a past state current as a new layout, keeps the old one for an undo, and takes new writes above everything before", async () => {
    const bucket = await factory.open();
    try {
      const store = new PrefixedObjectStore(bucket.store, "deployment/");
      const history = await liveHistory(store, 17, 20);
      const stamps = history.changes.map((change) => change.ts);
      const atTs = stamps[Math.floor(stamps.length / 2)]!;
      const before = await answersOf(store);

      // Killed before the switch (the new layout's last manifest fails): the deployment is untouched.
      const faulty = new FaultyObjectStore(store, new SeededRandom(4), systemClock);
      faulty.inject({ operations: ["create"], keyPattern: /^g1\/s1\/manifest$/, once: true, effect: "unreachable" });
      await expect(restoreInPlace({ store: faulty, atTs, workDirectory: freshDirectory() })).rejects.toThrow();
      expect((await globalsObject(store, systemRandom).read())!.value).toMatchObject({ generation: 0, highestGeneration: 1, reshard: null });
      expect(await answersOf(store)).toEqual(before);

      const report = await restoreInPlace({ store, atTs, workDirectory: freshDirectory() });
      expect(report).toMatchObject({ atTs, fromGeneration: 0, generation: 2, numShards: SHARDS, cleanupError: null });
      expect(report.keptUntil).toBeGreaterThan(systemClock.nowMs());
      expect(await answersOf(store)).toEqual(expectedAnswers(stateAt(history.changes, atTs)));

      // New writes continue above everything the replaced layout ever stamped.
      const { sharded, runtime } = await openNode(store);
      let afterTs: number;
      try {
        afterTs = (await runtime.runMutation("notes:add", { channel: "a", n: 5_000, body: "after the restore" })).ts;
      } finally {
        await sharded.close();
      }
      expect(afterTs).toBeGreaterThan(stamps.at(-1)!);
      expect((await answersOf(store)).notes.map((note) => note.body)).toContain("after the restore");

      // Undo: the state just before the restore lives in the kept layout.
      const undo = await restoreInPlace({ store, atTs: stamps.at(-1)!, workDirectory: freshDirectory() });
      expect(undo).toMatchObject({ fromGeneration: 0, generation: 3 });
      expect(await answersOf(store)).toEqual(before);
      // …and the write made after the first restore is restorable from the layout that took it.
      await restoreInPlace({ store, atTs: afterTs, workDirectory: freshDirectory() });
      expect((await answersOf(store)).notes.map((note) => note.body)).toContain("after the restore");
      const globals = (await globalsObject(store, systemRandom).read())!.value;
      expect(globals.generation).toBe(4);
      expect(globals.retired.map((old) => old.generation).sort()).toEqual([0, 2, 3]);
    } finally {
      await bucket.close();
    }
  }, 180_000);
});

describe("in-place restore refuses, changing nothing", () => {
  it("while a writer is live, while a reshard runs, outside the window; with retention 0 the old layout goes at once", async () => {
    const bucket = await memoryBucket.open();
    try {
      const store = new PrefixedObjectStore(bucket.store, "deployment/");
      const history = await liveHistory(store, 19, 8);
      const atTs = history.changes[2]!.ts;
      const { sharded } = await openNode(store);
      try {
        await expect(restoreInPlace({ store, atTs })).rejects.toMatchObject({ code: "LEASE_HELD" });
      } finally {
        await sharded.close();
      }
      await expect(restoreInPlace({ store, atTs: history.changes[0]!.ts - 60_000_000 })).rejects.toMatchObject({ code: "RESTORE_OUT_OF_RANGE" });
      await expect(restoreInPlace({ store, atTs: -5 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const reshard = await HeldReshardLock.take(store, systemRandom, { owner: "a-reshard", nowMs: systemClock.nowMs(), ttlMs: 30_000, toShards: 3 });
      await expect(restoreInPlace({ store, atTs })).rejects.toMatchObject({ code: "RESHARD_IN_PROGRESS" });
      await reshard.release();
      expect((await globalsObject(store, systemRandom).read())!.value).toMatchObject({ generation: 0, highestGeneration: 1, reshard: null });

      // Retention 0: nothing is kept, the replaced layout is deleted after the switch.
      await globalsObject(store, systemRandom).update((current) => {
        const { version: _version, nonce: _nonce, ...fields } = current!;
        return { ...fields, retentionMs: 0 };
      });
      const report = await restoreInPlace({ store, atTs });
      expect(report.keptUntil).toBeNull();
      expect(report.objectsDeleted).toBeGreaterThan(0);
      for await (const entry of store.list("s0/")) expect.fail(`the replaced layout left ${entry.key}`);
      expect(await answersOf(store)).toEqual(expectedAnswers(stateAt(history.changes, atTs)));
    } finally {
      await bucket.close();
    }
  }, 60_000);
});

/**
 * The GC race: a node without retention (GC collects everything below the current
 * snapshot) writes notes 0–9, snapshots every shard and writes up to `notes`; a restore
 * at note `atNote`'s ts starts, its GETs of keys matching `held` waiting; meanwhile the
 * node writes 5 more notes, snapshots and collects every shard (`collected` sees each
 * report), then stops — handed back, so the log's end no longer says "not settled" —
 * and the GETs go on. `check` sees the restore's outcome while the bucket is open.
 */
async function raceRestoreWithGc(
  race: { readonly notes: number; readonly atNote: number; readonly held: RegExp; readonly collected: (report: GarbageReport, shard: number) => void },
  check: (result: { outcome: { report: RestoreReport } | { error: unknown }; expected: Note[]; target: ObjectStore }) => Promise<void>,
): Promise<void> {
  const bucket = await memoryBucket.open();
  try {
    const store = new PrefixedObjectStore(bucket.store, "deployment/");
    const target = new PrefixedObjectStore(bucket.store, "target/");
    const { sharded, runtime } = await openNode(store, { retentionMs: 0 });
    let closed = false;
    const changes: Change[] = [];
    const add = async (n: number) => {
      const note = { channel: CHANNELS[n % CHANNELS.length]!, n, body: `note ${n}` };
      const run = await runtime.runMutation("notes:add", note);
      changes.push({ ts: run.ts, kind: "put", note: { id: run.value as DocumentId, ...note } });
    };
    try {
      for (let n = 0; n < 10; n++) await add(n);
      for (const engine of sharded.engines) await engine.snapshotNow();
      for (let n = 10; n < race.notes; n++) await add(n);
      const atTs = changes[race.atNote]!.ts;
      const faulty = new FaultyObjectStore(store, new SeededRandom(9), systemClock);
      let release!: () => void;
      faulty.inject({ operations: ["get"], keyPattern: race.held, effect: { until: new Promise<void>((resolve) => (release = resolve)) } });
      const restoring = restoreObjectStore({ source: faulty, target, atTs, workDirectory: freshDirectory() }).then(
        (report) => ({ report }),
        (error: unknown) => ({ error }),
      );
      while (faulty.held === 0) await new Promise((resolve) => setTimeout(resolve, 2));
      for (let n = race.notes; n < race.notes + 5; n++) await add(n);
      for (const [shard, engine] of sharded.engines.entries()) {
        await engine.snapshotNow();
        race.collected(await engine.collectGarbageNow(), shard);
      }
      closed = true;
      await sharded.close();
      release();
      faulty.releaseAll();
      await check({ outcome: await restoring, expected: stateAt(changes, atTs), target });
    } finally {
      if (!closed) await sharded.close();
    }
  } finally {
    await bucket.close();
  }
}

describe("a restore racing GC", () => {
  it("never restores a log GC truncated under it: it refuses, or is exact", async () => {
    // Shard 1's log reads are held (its base chosen) while GC deletes what it needs.
    const collected = (report: GarbageReport) => expect(report.logStartAfter).toBeGreaterThan(report.logStartBefore);
    await raceRestoreWithGc({ notes: 40, atNote: 25, held: /^s1\/log\//, collected }, async ({ outcome, expected, target }) => {
      if ("error" in outcome) {
        expect(["RESTORE_OUT_OF_RANGE", "SNAPSHOT_MISSING"]).toContain(codeOfError(outcome.error));
      } else {
        expect(await answersOf(target)).toEqual(expectedAnswers(expected));
      }
    });
  }, 60_000);

  it("refuses with RESTORE_OUT_OF_RANGE when GC collects the base snapshot while its parts are read, leaving the target empty", async () => {
    // The log after the base is read and checked first; the base's parts are read last
    // (the merge) — held here while a newer snapshot and GC collect the base.
    const collected = (report: GarbageReport, shard: number) => {
      if (shard === 0) expect(report.snapshotObjectsDeleted).toBeGreaterThan(0);
    };
    await raceRestoreWithGc({ notes: 20, atNote: 15, held: /^s0\/snap.*part-/, collected }, async ({ outcome, target }) => {
      expect("error" in outcome, "the base was collected under the restore").toBe(true);
      expect(codeOfError((outcome as { error: unknown }).error)).toBe("RESTORE_OUT_OF_RANGE");
      for await (const entry of target.list("")) expect.fail(`a refused restore left ${entry.key}`);
    });
  }, 60_000);
});

describe("restore refuses bad input, changing nothing", () => {
  it("refuses a target with objects, the source itself, bad timestamps, the future, an empty source and an unsettled ts", async () => {
    const bucket = await memoryBucket.open();
    try {
      const source = new PrefixedObjectStore(bucket.store, "source/");
      const history = await liveHistory(source, 5, 6);
      const atTs = history.changes.at(-1)!.ts;
      const occupied = new PrefixedObjectStore(bucket.store, "occupied/");
      await occupied.create("notes.txt", new TextEncoder().encode("mine"));
      await expect(restoreObjectStore({ source, target: occupied, atTs })).rejects.toMatchObject({ code: "RESTORE_TARGET_NOT_EMPTY" });
      await expect(restoreObjectStore({ source, target: source, atTs })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const target = new PrefixedObjectStore(bucket.store, "target/");
      for (const bad of [-1, 1.5, Number.NaN, 2 ** 60]) {
        await expect(restoreObjectStore({ source, target, atTs: bad })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      }
      await expect(restoreObjectStore({ source, target, atTs: (systemClock.nowMs() + 60_000) * 1000 })).rejects.toMatchObject({ code: "RESTORE_OUT_OF_RANGE" });
      await expect(restoreObjectStore({ source: new PrefixedObjectStore(bucket.store, "nothing/"), target, atTs })).rejects.toMatchObject({ code: "DEPLOYMENT_MISMATCH" });

      // A live writer may still commit at or before a ts past its log's end: not settled yet.
      const { sharded, runtime } = await openNode(source);
      try {
        const late = await runtime.runMutation("notes:add", { channel: "a", n: 1, body: "late" });
        // Past every shard's last segment (the commit and the other shard's tick), not yet in the past by the settling margin.
        while (systemClock.nowMs() * 1000 <= late.ts + 20_000) await new Promise((resolve) => setTimeout(resolve, 5));
        await expect(restoreObjectStore({ source, target, atTs: late.ts + 10_000 })).rejects.toMatchObject({ code: "RESTORE_OUT_OF_RANGE" });
      } finally {
        await sharded.close();
      }
      for await (const entry of target.list("")) expect.fail(`a refused restore left ${entry.key}`);
      // Every snapshot the source took is recorded.
      expect((await readSnapshotRecords(source, 0)).malformed).toEqual([]);

      // A snapshot part damaged in the bucket (its inflate runs off the thread here) fails its check: nothing is restored from it.
      const node = await openNode(source);
      const pointer = (await node.sharded.engines[0]!.snapshotNow())!;
      await node.sharded.close();
      const partKey = bucketLayout.snapshotPart(pointer.key, 0);
      const part = (await source.get(partKey)) as { body: Uint8Array };
      const damaged = Uint8Array.from(part.body);
      damaged[Math.floor(damaged.length / 2)]! ^= 0xff;
      await source.delete(partKey);
      await source.create(partKey, damaged);
      const afterSnapshot = new PrefixedObjectStore(bucket.store, "after-damage/");
      await expect(restoreObjectStore({ source, target: afterSnapshot, atTs: pointer.ts, workDirectory: freshDirectory() })).rejects.toMatchObject({ code: "SNAPSHOT_INVALID" });
    } finally {
      await bucket.close();
    }
  }, 60_000);
});
