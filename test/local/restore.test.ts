/**
 * Scenario: restoring a dump. A store with its own state is restored from another
 * store's dump: afterwards it holds exactly the dump (documents absent from it are gone),
 * meta comes from the restore meta with minReadableTs = frontierTs, and the result
 * survives a reopen. A bad row, a bad meta, a failing chunk source, or a store closed
 * mid-restore (the stand-in for a crash) all leave the old state; while a restore runs,
 * reads see the old state and writes are refused.
 */
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/errors.js";
import type { DumpChunk, LocalStore, RestoreMeta } from "../../src/local/index.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { batch, entry, hex, ids, key, receipt, rejected, revision, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

const ALL = { start: new Uint8Array(0), end: null };
const RESTORE_META: RestoreMeta = { appliedSeqno: 41, epoch: 5, lastHash: "feed", frontierTs: 500 };
const [KEPT, GONE, NEW] = ids(3, 1, 41) as DocumentId[];

/** The target's own state: KEPT and GONE, an index entry each, one receipt. */
function seedTarget(store: LocalStore): void {
  store.apply(
    batch({
      revisions: [revision(KEPT!, 100, '{"target":1}'), revision(GONE!, 100, '{"target":2}')],
      indexUpdates: [entry(1, key("kept"), 100, KEPT!), entry(1, key("gone"), 100, GONE!)],
      receipts: [receipt("old-client", 1, 100)],
      meta: { appliedSeqno: 7, epoch: 2, lastHash: "aa", frontierTs: 100 },
    }),
  );
}

/** The dump to restore: KEPT (changed) and NEW, their entries, one other receipt. */
async function sourceChunks(): Promise<DumpChunk[]> {
  const source = stores.open(":memory:");
  source.apply(
    batch({
      revisions: [revision(KEPT!, 300, '{"source":1}'), revision(NEW!, 400, '{"source":2}')],
      indexUpdates: [entry(1, key("kept"), 300, KEPT!), entry(1, key("new"), 400, NEW!)],
      receipts: [receipt("new-client", 9, 400)],
      meta: { appliedSeqno: 41, frontierTs: 500 },
    }),
  );
  const cursor = await source.openDumpCursor({ rowsPerChunk: 1 });
  const chunks: DumpChunk[] = [];
  for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) chunks.push(chunk);
  cursor.close();
  return chunks;
}

function stateOf(store: LocalStore): unknown {
  const meta = store.meta();
  const ts = Math.max(meta.minReadableTs, store.maxTs());
  return {
    meta,
    documents: store.getMany([KEPT!, GONE!, NEW!], ts),
    scan: store.indexScan(1, ALL, ts, "asc", 100).map((row) => [hex(row.key), row.id, row.docTs]),
    receipts: [store.receipt("old-client", 1), store.receipt("new-client", 9)],
  };
}

async function* slowly(chunks: DumpChunk[], between: () => void): AsyncGenerator<DumpChunk> {
  for (const chunk of chunks) {
    yield chunk;
    await new Promise<void>((resolve) => setImmediate(resolve));
    between();
  }
}

function eachPath(): string[] {
  return [dirs.file(), ":memory:"];
}

describe("LocalStore.restore", () => {
  it("replaces the whole state, deletes what the dump lacks, and sets meta", async () => {
    for (const path of eachPath()) {
      const store = stores.open(path);
      seedTarget(store);
      const stats = await store.restore(await sourceChunks(), RESTORE_META);
      expect(stats).toEqual({ documents: 2, indexEntries: 2, receipts: 1 });
      expect(store.meta()).toMatchObject({ ...RESTORE_META, minReadableTs: 500 });
      expect(store.get(KEPT!, 500)).toEqual({ value: '{"source":1}', ts: 300 });
      expect(store.get(GONE!, 500)).toBeNull();
      expect(store.get(NEW!, 500)).toEqual({ value: '{"source":2}', ts: 400 });
      expect(store.indexScan(1, ALL, 500, "asc", 10).map((row) => row.id)).toEqual([KEPT, NEW]);
      expect(store.receipt("old-client", 1)).toBeNull();
      expect(store.receipt("new-client", 9)).toEqual(receipt("new-client", 9, 400));
      expect(thrown(() => store.get(KEPT!, 499)).code).toBe("LOCAL_HISTORY_UNAVAILABLE");
      expect(store.changes(500, 10_000, 10)).toEqual([]);
      // The restored store keeps working: apply, prune and dump again.
      store.apply(batch({ revisions: [revision(NEW!, 600, null, 400)], indexUpdates: [entry(1, key("new"), 600, null)], meta: { appliedSeqno: 42 } }));
      expect(store.count(1, ALL, 600)).toBe(1);
      await store.pruneHistory(700);
      expect(store.get(NEW!, 700)).toBeNull();
    }
  });

  it("returns with the restored pages copied out of the WAL, so the first fold after it does not stall on them", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    const documentIds = ids(20_000, 1, 44);
    const chunks: DumpChunk[] = [];
    for (let at = 0; at < documentIds.length; at += 1_000) {
      chunks.push({ kind: "documents", rows: documentIds.slice(at, at + 1_000).map((id) => revision(id, 10, JSON.stringify({ pad: "p".repeat(200) }))) });
    }
    await store.restore(chunks, RESTORE_META);
    // ~5 MiB of documents went through the WAL; the worker's checkpoints copied them and truncated it.
    expect(statSync(`${path}-wal`).size).toBeLessThan(64 * 1024);
    expect(store.get(documentIds[19_999]! as DocumentId, 500)?.value).toContain("ppp");
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT COUNT(*) FROM documents").pluck().get()).toBe(20_000);
    raw.close();
  });

  it("accepts an async chunk source and survives a reopen", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    seedTarget(store);
    await store.restore(slowly(await sourceChunks(), () => undefined), RESTORE_META);
    const expected = stateOf(store);
    await store.flush();
    store.close();
    expect(stateOf(stores.open(path))).toEqual(expected);
  });

  it("restores an empty dump to an empty state", async () => {
    const store = stores.open(dirs.file());
    seedTarget(store);
    expect(await store.restore([], RESTORE_META)).toEqual({ documents: 0, indexEntries: 0, receipts: 0 });
    expect(store.maxTs()).toBe(0);
    expect(store.count(1, ALL, 500)).toBe(0);
  });

  const badChunks: [string, (chunks: DumpChunk[]) => unknown[]][] = [
    ["a revision with a malformed id", (chunks) => [...chunks, { kind: "documents", rows: [revision("bad" as DocumentId, 1, "{}")] }]],
    ["a deletion", (chunks) => [...chunks, { kind: "documents", rows: [revision(GONE!, 1, null)] }]],
    ["a removed index key", (chunks) => [...chunks, { kind: "indexEntries", rows: [entry(1, key("x"), 1, null)] }]],
    ["an invalid index key", (chunks) => [...chunks, { kind: "indexEntries", rows: [entry(1, Uint8Array.of(0x99), 1, NEW!)] }]],
    ["a bad receipt", (chunks) => [...chunks, { kind: "receipts", rows: [receipt("", 1, 1)] }]],
    ["a chunk of unknown kind", (chunks) => [...chunks, { kind: "documentz", rows: [] }]],
    ["a chunk without rows", (chunks) => [...chunks, { kind: "documents" }]],
    ["the same (id, ts) twice", (chunks) => [...chunks, chunks[0]]],
  ];

  it.each(badChunks)("refuses %s with LOCAL_RESTORE_INVALID and keeps the old state", async (_name, corrupt) => {
    for (const path of eachPath()) {
      const store = stores.open(path);
      seedTarget(store);
      const before = stateOf(store);
      const error = await rejected(store.restore(corrupt(await sourceChunks()) as DumpChunk[], RESTORE_META));
      expect(error.code).toBe("LOCAL_RESTORE_INVALID");
      expect(stateOf(store)).toEqual(before);
      // Nothing is left half-done: a good restore still works afterwards.
      await store.restore(await sourceChunks(), RESTORE_META);
      expect(store.get(NEW!, 500)).not.toBeNull();
    }
  });

  // With recordsChecked (a snapshot verified by hash), ids and keys are not parsed again,
  // but every check of shape and state still holds.
  const badShapes = badChunks.filter(([name]) => !["a revision with a malformed id", "an invalid index key"].includes(name));
  it.each(badShapes)("refuses %s with LOCAL_RESTORE_INVALID even for records checked before", async (_name, corrupt) => {
    const store = stores.open(dirs.file());
    seedTarget(store);
    const before = stateOf(store);
    const error = await rejected(store.restore(corrupt(await sourceChunks()) as DumpChunk[], RESTORE_META, { recordsChecked: true }));
    expect(error.code).toBe("LOCAL_RESTORE_INVALID");
    expect(stateOf(store)).toEqual(before);
    await store.restore(await sourceChunks(), RESTORE_META, { recordsChecked: true });
    expect(store.get(NEW!, 500)).not.toBeNull();
  });

  it("refuses a bad restore meta and keeps the old state", async () => {
    const store = stores.open(dirs.file());
    seedTarget(store);
    const before = stateOf(store);
    for (const meta of [
      { ...RESTORE_META, appliedSeqno: -2 },
      { ...RESTORE_META, epoch: 0.5 },
      { ...RESTORE_META, lastHash: 7 as unknown as string },
      { ...RESTORE_META, frontierTs: -1 },
    ]) {
      expect((await rejected(store.restore(await sourceChunks(), meta))).code).toBe("LOCAL_RESTORE_INVALID");
    }
    expect(stateOf(store)).toEqual(before);
  });

  it("passes on the chunk source's own error and keeps the old state", async () => {
    const store = stores.open(dirs.file());
    seedTarget(store);
    const before = stateOf(store);
    async function* failing(): AsyncGenerator<DumpChunk> {
      yield* (await sourceChunks()).slice(0, 3);
      throw new CairnError("SNAPSHOT_INVALID", "snapshot fails its combined hash");
    }
    expect((await rejected(store.restore(failing(), RESTORE_META))).code).toBe("SNAPSHOT_INVALID");
    expect(stateOf(store)).toEqual(before);
  });

  it("serves reads of the old state and refuses writes while it runs", async () => {
    const store = stores.open(dirs.file());
    seedTarget(store);
    const before = stateOf(store);
    const observed: unknown[] = [];
    const refusedPrunes: Promise<{ code?: string }>[] = [];
    const restoring = store.restore(
      slowly(await sourceChunks(), () => {
        observed.push(stateOf(store));
        expect(thrown(() => store.apply(batch({ meta: { appliedSeqno: 8 } }))).code).toBe("LOCAL_BUSY");
        refusedPrunes.push(rejected(store.pruneHistory(1)));
      }),
      RESTORE_META,
    );
    expect((await rejected(store.restore([], RESTORE_META))).code).toBe("LOCAL_BUSY");
    await restoring;
    expect(observed.length).toBeGreaterThan(0);
    for (const refused of await Promise.all(refusedPrunes)) expect(refused.code).toBe("LOCAL_BUSY");
    for (const state of observed) expect(state).toEqual(before);
    store.apply(batch({ meta: { appliedSeqno: 42 } }));
  });

  it("leaves the old state when the store closes mid-restore, as after a crash", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    seedTarget(store);
    // Folded, the seeded state is what the file holds when the crash comes.
    await store.flush();
    const before = stateOf(store);
    let delivered = 0;
    const restoring = store.restore(
      slowly(await sourceChunks(), () => {
        delivered++;
        if (delivered === 2) store.close();
      }),
      RESTORE_META,
    );
    expect((await rejected(restoring)).code).toBe("LOCAL_CLOSED");
    // The staging tables were filled but never swapped in.
    const raw = new Database(path, { readonly: true });
    const staged = raw.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'restore_%' AND type = 'table'").pluck().all();
    raw.close();
    expect(staged.length).toBeGreaterThan(0);
    const reopened = stores.open(path);
    expect(stateOf(reopened)).toEqual(before);
  });
});
