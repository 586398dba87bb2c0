/**
 * Scenario: branches (`createBranch`, DESIGN.md §10a) on real engines and SQLite files,
 * over a directory bucket, the S3 test endpoint, and (when CAIRN_TEST_S3_URL names one) a
 * real S3 server, every store opened by URL as a node opens it.
 *
 * A two-shard parent lives through a seeded history of inserts, edits, renumberings and
 * deletes with snapshots between. Branches at random timestamps (exact commit
 * timestamps, just before them, inside segments) hold exactly the model's state at that
 * ts while copying nothing but each shard's cut segment; writes to a branch never appear
 * in the parent nor the parent's later writes in the branch; a branch of a branch works,
 * and is refused before its parent's fork. The parent's GC keeps what a live branch
 * holds through snapshots, collections and sweeps, frees it once the branch is deleted
 * (which frees only the branch's own objects) or expired, and a GC pass that started
 * before a branch registered cannot delete what the branch then reads. Bad input and a
 * creation killed midway change nothing the branch's users could see.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { randomInt, SeededRandom, systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { InheritingObjectStore, openObjectStore, type ObjectStore } from "../../src/objectstore/index.js";
import { deleteBranch, renewBranch } from "../../src/shard/branchLifecycle.js";
import { createBranch, type BranchReport } from "../../src/shard/createBranch.js";
import { reshardObjectStore } from "../../src/shard/reshardObjectStore.js";
import { restoreObjectStore } from "../../src/shard/restoreObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { ensureBucket, newTestPrefix, realS3, removePrefix, storeUrlFor } from "../support/realS3.js";
import { startS3Endpoint } from "../support/s3-endpoint/index.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "./historyApp.js";
import { randomChange, stateAt, timestampsInsideSegments, type Change, type Note } from "./historyModel.js";

const root = mkdtempSync(join(tmpdir(), "cairn-branch-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let directories = 0;
const freshDirectory = () => join(root, `d${directories++}`);

const app = App.fromModule(historyApp, "history test app");
const CHANNELS = ["a", "b", "c", "d", "e"];
const SHARDS = 2;
const HOUR_MS = 60 * 60 * 1000;

/** Where deployments live: roots by name, opened by URL with the credentials a node would have. */
interface Location {
  readonly url: (name: string) => string;
  readonly open: (url: string) => Promise<ObjectStore>;
  readonly close: () => Promise<void>;
}

interface LocationFactory {
  readonly name: string;
  readonly start: () => Promise<Location>;
}

const directoryLocation: LocationFactory = {
  name: "a directory",
  start: async () => {
    const base = freshDirectory();
    return { url: (name) => join(base, name), open: (url) => openObjectStore(url), close: async () => undefined };
  },
};

const s3EndpointLocation: LocationFactory = {
  name: "the S3 test endpoint",
  start: async () => {
    const endpoint = await startS3Endpoint();
    const query = `?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
    return {
      url: (name) => `s3://${endpoint.bucket}/${name}/${query}`,
      open: (url) => openObjectStore(url, { s3: { credentials: endpoint.credentials } }),
      close: () => endpoint.close(),
    };
  },
};

const configuredRealS3 = realS3();
const LOCATIONS: LocationFactory[] = [
  directoryLocation,
  s3EndpointLocation,
  ...(configuredRealS3 === undefined
    ? []
    : [
        {
          name: "the real store of CAIRN_TEST_S3_URL",
          start: async (): Promise<Location> => {
            const s3 = configuredRealS3;
            await ensureBucket(s3);
            const prefix = newTestPrefix("branch");
            return { url: (name) => storeUrlFor(s3, `${prefix}${name}/`), open: (url) => openObjectStore(url), close: async () => void (await removePrefix(s3, prefix)) };
          },
        },
      ]),
];

interface Node {
  readonly sharded: ShardedStore;
  readonly runtime: FunctionRuntime;
}

async function openNode(store: ObjectStore, tuning: Record<string, number> = {}, numShards: number | null = SHARDS): Promise<Node> {
  const sharded = await ShardedStore.open({ store, localDirectory: freshDirectory(), nodeId: `node-${directories}`, ...(numShards === null ? {} : { numShards }), tuning });
  try {
    await sharded.acquireAll();
    return { sharded, runtime: await shardedRuntime(sharded, store, app, systemRandom) };
  } catch (error) {
    await sharded.close();
    throw error;
  }
}

/** `rounds` rounds of 1–5 concurrent mutations through `node`, snapshots at random between them; the changes, in ts order. */
async function live(node: Node, seed: number, rounds: number, start: readonly Note[] = []): Promise<Change[]> {
  const random = new SeededRandom(seed);
  const changes: Change[] = [];
  const notes = new Map(start.map((note) => [note.id, note]));
  let n = seed * 10_000;
  for (let round = 0; round < rounds; round++) {
    const touched = new Set<DocumentId>();
    await Promise.all(
      Array.from({ length: 1 + randomInt(random, 5) }, async () => changes.push(await randomChange(node.runtime, random, notes, touched, round, CHANNELS, () => n++))),
    );
    if (randomInt(random, 10) < 3) await node.sharded.engines[randomInt(random, SHARDS)]!.snapshotNow();
  }
  return changes.sort((a, b) => a.ts - b.ts);
}

/** `live` on a node of its own, opened on `store` and closed after. */
async function liveOn(store: ObjectStore, seed: number, rounds: number, start: readonly Note[] = [], numShards: number | null = SHARDS): Promise<Change[]> {
  const node = await openNode(store, {}, numShards);
  try {
    return await live(node, seed, rounds, start);
  } finally {
    await node.sharded.close();
  }
}

type Answers = { notes: Note[]; channels: number[][]; byId: Note[] };

/** Every note through the cross-shard index, each channel's ns through the shard-key index, and each note the model ever had read by id. */
async function answersOfNode(node: Node, ids: readonly DocumentId[]): Promise<Answers> {
  const notes = ((await node.runtime.runQuery("notes:all", {})).value as unknown as Note[]).sort((a, b) => (a.id < b.id ? -1 : 1));
  const channels: number[][] = [];
  for (const channel of CHANNELS) channels.push(((await node.runtime.runQuery("notes:inChannel", { channel })).value as number[]).sort((a, b) => a - b));
  const found = (await node.runtime.runQuery("notes:byIds", { ids: [...ids] })).value as unknown as (Note | null)[];
  return { notes, channels, byId: found.filter((note): note is Note => note !== null).sort((a, b) => (a.id < b.id ? -1 : 1)) };
}

/** Every id a history ever created. */
function idsOf(changes: readonly Change[]): DocumentId[] {
  return [...new Set(changes.map((change) => (change.kind === "put" ? change.note.id : change.id)))];
}

/** What a fresh writer of the deployment at `store` answers (a new node: it restores and replays from the bucket). */
async function answersOf(store: ObjectStore, ids: readonly DocumentId[]): Promise<Answers> {
  const node = await openNode(store, {}, null);
  try {
    return await answersOfNode(node, ids);
  } finally {
    await node.sharded.close();
  }
}

function expectedAnswers(notes: readonly Note[]): Answers {
  return {
    notes: [...notes],
    byId: [...notes],
    channels: CHANNELS.map((channel) =>
      notes
        .filter((note) => note.channel === channel)
        .map((note) => note.n)
        .sort((a, b) => a - b),
    ),
  };
}

/** The keys a store holds itself (a branch's view without what it inherits). */
async function ownKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  const listing = store instanceof InheritingObjectStore ? store.ownStore.list("") : store.list("");
  for await (const entry of listing) keys.push(entry.key);
  return keys;
}

async function allKeys(store: ObjectStore, prefix = ""): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of store.list(prefix)) keys.push(entry.key);
  return keys;
}

function branchOf(location: Location, parentName: string, targetName: string, atTs: number, extra: Partial<Parameters<typeof createBranch>[0]> = {}) {
  return async (parent: ObjectStore): Promise<{ report: BranchReport; store: ObjectStore }> => {
    const target = await location.open(location.url(targetName));
    let report: BranchReport;
    try {
      report = await createBranch({ parent, parentUrl: location.url(parentName), target, targetUrl: location.url(targetName), atTs, ttlMs: HOUR_MS, openStore: location.open, settledAfterMs: 0, ...extra });
    } finally {
      await target.close();
    }
    return { report, store: await location.open(location.url(targetName)) };
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The parent's keys a branch's registration holds (snapshot parts and record, the run of segments): which are there, which not. */
async function heldKeys(parent: ObjectStore, report: BranchReport): Promise<{ present: string[]; missing: string[] }> {
  const present: string[] = [];
  const missing: string[] = [];
  for (const shard of report.shards) {
    for (let seqno = shard.logFrom; seqno <= shard.logThrough; seqno++) {
      const key = bucketLayout.segment(shard.shard, seqno);
      ((await parent.get(key)) === null ? missing : present).push(key);
    }
    if (shard.snapshotSeqno !== null) {
      const parts = (await allKeys(parent, bucketLayout.snapshotsPrefix(shard.shard))).filter((key) => key.startsWith(`${bucketLayout.snapshotsPrefix(shard.shard)}${String(shard.snapshotSeqno).padStart(20, "0")}/`));
      if (parts.length === 0) missing.push(`snapshot ${shard.snapshotSeqno} of shard ${shard.shard}`);
      present.push(...parts);
    }
  }
  return { present, missing };
}

describe.each(LOCATIONS)("branches on $name", (factory) => {
  it("holds exactly the parent's state at random timestamps, copying nothing but cut segments; writes stay on their side", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    const opened: ObjectStore[] = [];
    try {
      const changes = await liveOn(parent, 5, 30);
      const stamps = changes.map((change) => change.ts);
      const random = new SeededRandom(17);
      const inside = await timestampsInsideSegments(parent, SHARDS);
      expect(inside.length).toBeGreaterThan(0);
      const targets = [...new Set([stamps[0]! - 1, stamps[randomInt(random, stamps.length)]!, stamps[randomInt(random, stamps.length)]! - 1, inside.at(-1)!, stamps.at(-1)!])].sort((a, b) => a - b);
      let index = 0;
      let cuts = 0;
      for (const atTs of targets) {
        const { report, store } = await branchOf(location, "parent", `branch-${index++}`, atTs)(parent);
        opened.push(store);
        cuts += report.shards.filter((shard) => shard.cutSeqno !== null).length;
        expect(await answersOf(store, idsOf(changes)), `branch at ${atTs}`).toEqual(expectedAnswers(stateAt(changes, atTs)));
        // Nothing of the past copied: the link, the catalog, globals, manifests, at most one cut segment per shard (and what the reader node wrote since: a fence).
        const own = await ownKeys(store);
        expect(own.filter((key) => key.includes("/snap/") || key.includes("/snapshots/")), "snapshot objects in the branch").toEqual([]);
        for (const shard of report.shards) {
          const forkEnd = shard.cutSeqno ?? shard.logThrough;
          const ownPast = own.filter((key) => key.startsWith(`s${shard.shard}/log/`) && Number(key.slice(key.lastIndexOf("/") + 1)) <= forkEnd);
          expect(ownPast, `shard ${shard.shard}: the branch's own segments of the past`).toEqual(shard.cutSeqno === null ? [] : [bucketLayout.segment(shard.shard, shard.cutSeqno)]);
        }
      }
      expect(cuts, "some fork fell inside a segment").toBeGreaterThan(0);

      // Writes after the fork: the branch's never reach the parent, the parent's never the branch.
      const lastTs = stamps.at(-1)!;
      const { store: branch } = await branchOf(location, "parent", "writable", lastTs)(parent);
      opened.push(branch);
      const base = stateAt(changes, lastTs);
      const branchChanges = await liveOn(branch, 6, 12, base);
      const parentChanges = await liveOn(parent, 7, 12, base);
      const branchHistory = [...changes, ...branchChanges].sort((a, b) => a.ts - b.ts);
      const parentHistory = [...changes, ...parentChanges].sort((a, b) => a.ts - b.ts);
      const everyId = idsOf([...changes, ...branchChanges, ...parentChanges]);
      expect(await answersOf(branch, everyId), "the branch: its own writes, none of the parent's").toEqual(expectedAnswers(stateAt(branchHistory, Number.MAX_SAFE_INTEGER)));
      expect(await answersOf(parent, everyId), "the parent: its own writes, none of the branch's").toEqual(expectedAnswers(stateAt(parentHistory, Number.MAX_SAFE_INTEGER)));

      // The branch's history is restorable like any deployment's, its inherited part included.
      for (const [name, ts] of [["restored-at-fork", lastTs], ["restored-after", branchChanges[Math.floor(branchChanges.length / 2)]!.ts]] as const) {
        const target = await location.open(location.url(name));
        await restoreObjectStore({ source: branch, target, atTs: ts, workDirectory: freshDirectory(), settledAfterMs: 0 });
        expect(await answersOf(target, everyId), `${name}`).toEqual(expectedAnswers(stateAt(branchHistory, ts)));
        await target.close();
      }

      // A branch of the branch: at a ts after its writes; before its fork it is refused.
      const branchTs = branchChanges.at(-1)!.ts;
      const { store: grandchild } = await branchOf(location, "writable", "grandchild", branchTs)(branch);
      opened.push(grandchild);
      expect(await answersOf(grandchild, everyId)).toEqual(expectedAnswers(stateAt(branchHistory, branchTs)));
      await expect(branchOf(location, "writable", "too-early", stamps[0]!)(branch)).rejects.toMatchObject({ code: "RESTORE_OUT_OF_RANGE" });
      expect(await allKeys(await location.open(location.url("too-early")))).toEqual([]);
    } finally {
      for (const store of opened) await store.close();
      await parent.close();
      await location.close();
    }
  }, 240_000);

  it("the parent's GC keeps what a live branch holds, below logStart too; deleting the branch frees only its own objects, and then GC collects the rest", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    try {
      const node = await openNode(parent, { retentionMs: 0 });
      let changes: Change[];
      let report: BranchReport;
      let branch: ObjectStore;
      try {
        changes = await live(node, 9, 16);
        for (const engine of node.sharded.engines) await engine.snapshotNow();
        const forkTs = changes.at(-1)!.ts;
        changes = [...changes, ...(await live(node, 10, 8, stateAt(changes, forkTs)))];
        ({ report, store: branch } = await branchOf(location, "parent", "held", forkTs)(parent));
        expect(report.shards.every((shard) => shard.snapshotSeqno !== null), "each shard starts from a snapshot").toBe(true);
        // The parent moves on: new snapshots, passes with sweeps; its logStart passes what the branch holds.
        changes = [...changes, ...(await live(node, 11, 8, stateAt(changes, Number.MAX_SAFE_INTEGER)))];
        for (const engine of node.sharded.engines) {
          await engine.snapshotNow();
          const collected = await engine.collectGarbageNow({ sweep: true });
          expect(collected.logStartAfter, `shard ${engine.shard}: logStart moved past the held run`).toBeGreaterThan(report.shards[engine.shard]!.logThrough + 1);
        }
      } finally {
        await node.sharded.close();
      }
      const forkTs = report.forkTs;
      const held = await heldKeys(parent, report);
      expect(held.missing, "what the branch holds is all still there").toEqual([]);
      expect(await answersOf(branch, idsOf(changes))).toEqual(expectedAnswers(stateAt(changes, forkTs)));

      const parentKeysBefore = await allKeys(parent);
      const deleted = await deleteBranch({ store: branch, openStore: location.open });
      expect(deleted.branchId).toBe(report.branchId);
      await branch.close();
      const reopened = await location.open(location.url("held"));
      expect(await allKeys(reopened), "nothing of the branch is left").toEqual([]);
      await reopened.close();
      expect(await allKeys(parent), "the parent's objects, all of them, minus the registration").toEqual(parentKeysBefore.filter((key) => key !== bucketLayout.branchRegistration(report.branchId)));

      // Unheld now: the next pass collects what only the branch needed.
      const again = await openNode(parent, { retentionMs: 0 });
      try {
        for (const engine of again.sharded.engines) await engine.collectGarbageNow({ sweep: true });
        expect(await answersOfNode(again, idsOf(changes))).toEqual(expectedAnswers(stateAt(changes, Number.MAX_SAFE_INTEGER)));
      } finally {
        await again.sharded.close();
      }
      expect((await heldKeys(parent, report)).present, "what the deleted branch held is collected").toEqual([]);
    } finally {
      await parent.close();
      await location.close();
    }
  }, 180_000);

  it("a resharded parent keeps the layout a live branch reads; a resharded branch reads its own copy, and once it is deleted the parent drops that layout", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    try {
      const changes = await liveOn(parent, 21, 14);
      const forkTs = changes.at(-1)!.ts;
      const { report, store: branch } = await branchOf(location, "parent", "resharded", forkTs)(parent);
      await reshardObjectStore({ store: parent, toShards: 3, workDirectory: freshDirectory() });
      const retired = (await globalsObject(parent, systemRandom).read())!.value.retired;
      expect(retired.map((old) => old.generation), "generation 0 kept for the branch").toEqual([0]);
      expect((await heldKeys(parent, report)).missing).toEqual([]);
      expect(await answersOf(branch, idsOf(changes))).toEqual(expectedAnswers(stateAt(changes, forkTs)));

      // A branch of the resharded parent reads its generation 1 (the link names g1/).
      const later = await liveOn(parent, 22, 6, stateAt(changes, forkTs), null);
      const laterTs = later.at(-1)!.ts;
      const { store: ofGeneration1 } = await branchOf(location, "parent", "of-generation-1", laterTs)(parent);
      const everything = [...changes, ...later].sort((a, b) => a.ts - b.ts);
      expect(await answersOf(ofGeneration1, idsOf(everything))).toEqual(expectedAnswers(stateAt(everything, laterTs)));
      await deleteBranch({ store: ofGeneration1, openStore: location.open });
      await ofGeneration1.close();

      await reshardObjectStore({ store: branch, toShards: 3, workDirectory: freshDirectory() });
      expect(await answersOf(branch, idsOf(changes)), "the resharded branch").toEqual(expectedAnswers(stateAt(changes, forkTs)));
      await deleteBranch({ store: branch, openStore: location.open });
      await branch.close();
      // The parent's next layout switch deletes the layout nobody holds any more.
      await reshardObjectStore({ store: parent, toShards: 2, workDirectory: freshDirectory() });
      const after = (await globalsObject(parent, systemRandom).read())!.value;
      expect(after.retired.map((old) => old.generation), "generation 0 deleted, 1 replaced just now").toEqual([]);
      expect(await allKeys(parent, "s0/")).toEqual([]);
      expect(await answersOf(parent, idsOf(everything))).toEqual(expectedAnswers(stateAt(everything, Number.MAX_SAFE_INTEGER)));
    } finally {
      await parent.close();
      await location.close();
    }
  }, 180_000);

  it("an expired branch holds nothing: it cannot be renewed nor branched, the parent collects, and its readers get a clear error", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    try {
      const node = await openNode(parent, { retentionMs: 0 });
      try {
        const changes = await live(node, 12, 12);
        for (const engine of node.sharded.engines) await engine.snapshotNow();
        const forkTs = changes.at(-1)!.ts;
        await live(node, 13, 6, stateAt(changes, forkTs));
        const { report, store: branch } = await branchOf(location, "parent", "short", forkTs, { ttlMs: 1_500 })(parent);
        const renewed = await renewBranch({ store: branch, openStore: location.open, ttlMs: 2_000 });
        expect(renewed.expiresAt).toBeGreaterThan(report.expiresAt);
        await sleep(renewed.expiresAt - Date.now() + 50);
        await expect(renewBranch({ store: branch, openStore: location.open })).rejects.toMatchObject({ code: "BRANCH_PARENT_EXPIRED" });
        await expect(branchOf(location, "short", "of-expired", forkTs)(branch)).rejects.toMatchObject({ code: "BRANCH_PARENT_EXPIRED" });
        await live(node, 14, 6, stateAt(changes, Number.MAX_SAFE_INTEGER));
        for (const engine of node.sharded.engines) {
          await engine.snapshotNow();
          await engine.collectGarbageNow({ sweep: true });
        }
        expect((await heldKeys(parent, report)).present, "an expired registration holds nothing").toEqual([]);
        const error = await answersOf(branch, []).then(
          () => null,
          (caught: unknown) => caught as { code?: string },
        );
        expect(error?.code).toBe("BRANCH_PARENT_EXPIRED");
        await branch.close();
      } finally {
        await node.sharded.close();
      }
    } finally {
      await parent.close();
      await location.close();
    }
  }, 120_000);

  it("a GC pass that decided before the branch registered cannot delete what the branch reads: the branch waits for it, then refuses", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    const faulty = new FaultyObjectStore(await location.open(location.url("parent")), new SeededRandom(4), systemClock);
    try {
      // Retention keeps every state, but thins snapshots an hour apart: the middle one of three goes.
      const node = await openNode(faulty, { retentionMs: HOUR_MS, retainedSnapshotSpacingMs: HOUR_MS });
      try {
        let changes = await live(node, 15, 6);
        const shard = node.sharded.engines[0]!;
        await shard.snapshotNow();
        changes = [...changes, ...(await live(node, 16, 6, stateAt(changes, Number.MAX_SAFE_INTEGER)))];
        const middle = (await shard.snapshotNow())!;
        changes = [...changes, ...(await live(node, 17, 6, stateAt(changes, Number.MAX_SAFE_INTEGER)))];
        const forkTs = changes.at(-1)!.ts;
        changes = [...changes, ...(await live(node, 18, 6, stateAt(changes, Number.MAX_SAFE_INTEGER)))];
        // Every channel written after the fork: shard 0's next snapshot closes after it (not a quiet shard's snapshot at the fork).
        for (const channel of CHANNELS) {
          const note = { channel, n: 99_000 + changes.length, body: "after the fork" };
          const run = await node.runtime.runMutation("notes:add", note);
          changes.push({ ts: run.ts, kind: "put", note: { id: run.value as DocumentId, ...note } });
        }
        await shard.snapshotNow();

        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        faulty.inject({ operations: ["deleteMany"], keyPattern: /^s0\/snapshots\//, once: true, effect: { until: gate } });
        const pass = shard.collectGarbageNow();
        const manifests = () => new ShardManifest(parent, 0, node.sharded.deploymentId, systemRandom).refresh();
        while ((await manifests()).collecting === null) await sleep(10);

        // The pass has read the registry (none) and is about to delete the middle snapshot; the branch picks it as its base.
        const creating = branchOf(location, "parent", "raced", forkTs)(parent).then(
          () => null,
          (error: unknown) => error as { code?: string },
        );
        while ((await allKeys(parent, "branches/")).length === 0) await sleep(10);
        await sleep(300);
        release();
        const collected = await pass;
        expect(collected.snapshotObjectsDeleted, "the pass deleted the middle snapshot").toBeGreaterThan(0);
        const refused = await creating;
        expect(refused?.code, "the branch saw its base go").toBe("RESTORE_OUT_OF_RANGE");
        expect(await allKeys(await location.open(location.url("raced"))), "a refused branch leaves nothing").toEqual([]);
        expect(await allKeys(parent, "branches/"), "nor a registration").toEqual([]);
        expect(middle.seqno).toBeGreaterThan(0);

        // Registered before a pass decides: the pass keeps it.
        const { report, store: branch } = await branchOf(location, "parent", "before", forkTs)(parent);
        await shard.snapshotNow();
        await shard.collectGarbageNow({ sweep: true });
        expect((await heldKeys(parent, report)).missing).toEqual([]);
        expect(await answersOf(branch, idsOf(changes))).toEqual(expectedAnswers(stateAt(changes, forkTs)));
        await branch.close();
      } finally {
        await node.sharded.close();
      }
    } finally {
      await faulty.close();
      await parent.close();
      await location.close();
    }
  }, 120_000);

  it("refuses bad input and a busy target with nothing changed; a creation killed midway is refused by nodes and finished by a re-run", async () => {
    const location = await factory.start();
    const parent = await location.open(location.url("parent"));
    try {
      const changes = await liveOn(parent, 19, 8);
      const atTs = changes.at(-1)!.ts;
      const parentKeys = await allKeys(parent);
      const refusedWith = async (name: string, ts: number, extra: Partial<Parameters<typeof createBranch>[0]>, code: string) => {
        await expect(branchOf(location, "parent", name, ts, extra)(parent)).rejects.toMatchObject({ code });
        expect(await allKeys(await location.open(location.url(name))), `${name}: nothing written`).toEqual([]);
      };
      await refusedWith("future", Date.now() * 1000 + 60_000_000, {}, "RESTORE_OUT_OF_RANGE");
      await refusedWith("before-creation", 1_000, {}, "RESTORE_OUT_OF_RANGE");
      await refusedWith("not-a-ts", 1.5, {}, "INVALID_ARGUMENT");
      await refusedWith("bad-ttl", atTs, { ttlMs: 0 }, "INVALID_ARGUMENT");
      await refusedWith("bad-id", atTs, { branchId: "../escape" }, "INVALID_ARGUMENT");
      const busy = await location.open(location.url("busy"));
      await busy.create("something", new TextEncoder().encode("x"));
      await busy.close();
      await expect(branchOf(location, "parent", "busy", atTs)(parent)).rejects.toMatchObject({ code: "RESTORE_TARGET_NOT_EMPTY" });
      // A name another branch of the parent holds, and a target inside the parent's root.
      const { store: named } = await branchOf(location, "parent", "named", atTs, { branchId: "taken" })(parent);
      await named.close();
      await refusedWith("same-name", atTs, { branchId: "taken" }, "INVALID_ARGUMENT");
      await expect(branchOf(location, "parent", "parent/inside", atTs)(parent)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const empty = await location.open(location.url("empty-parent"));
      await expect(branchOf(location, "empty-parent", "of-nothing", atTs)(empty)).rejects.toMatchObject({ code: "DEPLOYMENT_MISMATCH" });
      await empty.close();
      expect((await allKeys(parent)).filter((key) => key !== bucketLayout.branchRegistration("taken")), "the parent is untouched by refusals").toEqual(parentKeys);

      // Killed after shard 0 was written, before shard 1's manifest.
      const target = new FaultyObjectStore(await location.open(location.url("killed")), new SeededRandom(1), systemClock);
      target.inject({ operations: ["create"], keyPattern: /^s1\/manifest$/, once: true, effect: "unreachable" });
      const options = { parent, parentUrl: location.url("parent"), target, targetUrl: location.url("killed"), atTs, ttlMs: HOUR_MS, openStore: location.open, settledAfterMs: 0 };
      await expect(createBranch(options)).rejects.toThrow();
      await expect(ShardedStore.open({ store: await location.open(location.url("killed")), localDirectory: freshDirectory(), nodeId: "early" })).rejects.toMatchObject({ code: "RESTORE_UNFINISHED" });
      await expect(createBranch({ ...options, atTs: atTs - 1 })).rejects.toMatchObject({ code: "RESTORE_UNFINISHED" });
      const finished = await createBranch(options);
      await target.close();
      expect((await allKeys(parent, "branches/")).filter((key) => key !== bucketLayout.branchRegistration("taken")).length, "one registration, the re-run's own").toBe(1);
      const branch = await location.open(location.url("killed"));
      expect(await answersOf(branch, idsOf(changes))).toEqual(expectedAnswers(stateAt(changes, atTs)));
      expect(finished.forkTs).toBe(atTs);
      await branch.close();
    } finally {
      await parent.close();
      await location.close();
    }
  }, 120_000);
});
