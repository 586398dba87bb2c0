/**
 * Scenario: pruning history. Documents and index keys are written, overwritten and
 * deleted over many timestamps (more rows than one pruning batch holds); pruning at B
 * must leave every read at ts >= B unchanged, make reads below B fail, drop exactly the
 * rows no such read can see, drop receipts older than B, and be a no-op when repeated or
 * asked to prune below the current floor.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { LOCAL_INDEX_SWEEP_INTERVAL_MS, LOCAL_PRUNE_BATCH_ROWS } from "../../src/base/limits.js";
import { LocalStore as Store } from "../../src/local/index.js";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import type { LocalStore } from "../../src/local/index.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { batch, entry, hex, ids, key, receipt, revision, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

const ALL = { start: new Uint8Array(0), end: null };

function readsAt(store: LocalStore, documents: readonly DocumentId[], ts: number): unknown {
  return {
    documents: store.getMany(documents, ts),
    scan: store.indexScan(1, ALL, ts, "asc", 100_000).map((row) => [hex(row.key), row.id, row.value, row.docTs]),
    descending: store.indexScan(1, ALL, ts, "desc", 7).map((row) => hex(row.key)),
    count: store.count(1, ALL, ts),
  };
}

/**
 * `rounds` batches at ts 1..rounds, each touching a few random documents: write a new
 * version (moving its index key), or delete it (removing its key). Returns the ids.
 */
function writeHistory(store: LocalStore, documentCount: number, rounds: number, seed: number): DocumentId[] {
  const random = new SeededRandom(seed);
  const documents = ids(documentCount, 1, seed);
  const current = new Map<DocumentId, { ts: number; keyValue: number }>();
  for (let ts = 1; ts <= rounds; ts++) {
    const revisions = [];
    const indexUpdates = [];
    const touched = new Set<DocumentId>();
    for (let write = 0; write < 1 + randomInt(random, 4); write++) {
      const id = documents[randomInt(random, documentCount)]!;
      if (touched.has(id)) continue;
      touched.add(id);
      const previous = current.get(id);
      if (previous !== undefined) indexUpdates.push(entry(1, key(previous.keyValue, id), ts, null));
      if (previous !== undefined && random.float() < 0.3) {
        revisions.push(revision(id, ts, null, previous.ts));
        current.delete(id);
        continue;
      }
      const keyValue = randomInt(random, 50);
      revisions.push(revision(id, ts, JSON.stringify({ keyValue, ts }), previous?.ts ?? null));
      indexUpdates.push(entry(1, key(keyValue, id), ts, id));
      current.set(id, { ts, keyValue });
    }
    store.apply(batch({ revisions, indexUpdates, receipts: [receipt(`client-${ts % 3}`, ts, ts)], meta: { appliedSeqno: ts, frontierTs: ts } }));
  }
  return documents;
}

/** Physical row counts, read through a separate connection. */
function rowCounts(path: string): { documents: number; indexEntries: number; receipts: number } {
  const raw = new Database(path, { readonly: true });
  try {
    const count = (table: string) => raw.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
    return { documents: count("documents"), indexEntries: count("index_entries"), receipts: count("receipts") };
  } finally {
    raw.close();
  }
}

describe("LocalStore.pruneHistory", () => {
  it("never changes a read at or above the prune ts", async () => {
    for (const path of [dirs.file(), ":memory:"]) {
      const store = stores.open(path);
      const documents = writeHistory(store, 12, 60, 51);
      const pruneAts = [5, 17, 18, 40, 61];
      const before = new Map<number, unknown>();
      for (let ts = pruneAts[0]!; ts <= 62; ts++) before.set(ts, readsAt(store, documents, ts));
      for (const belowTs of pruneAts) {
        await store.pruneHistory(belowTs);
        expect(store.meta().minReadableTs).toBe(belowTs);
        for (let ts = belowTs; ts <= 62; ts++) expect(readsAt(store, documents, ts)).toEqual(before.get(ts));
        expect(thrown(() => store.get(documents[0]!, belowTs - 1)).code).toBe("LOCAL_HISTORY_UNAVAILABLE");
      }
    }
  });

  it("keeps only the newest non-deleted row at or below the prune ts, and everything above", async () => {
    const store = stores.open(dirs.file());
    const [a, b, c] = ids(3, 1, 52);
    store.apply(
      batch({
        revisions: [revision(a!, 1, '"a1"'), revision(b!, 1, '"b1"'), revision(c!, 1, '"c1"')],
        indexUpdates: [entry(1, key("a"), 1, a!), entry(1, key("b"), 1, b!)],
        receipts: [receipt("x", 1, 1), receipt("x", 2, 5), receipt("x", 3, 6)],
      }),
    );
    store.apply(batch({ revisions: [revision(a!, 2, '"a2"', 1), revision(b!, 2, null, 1)], indexUpdates: [entry(1, key("b"), 2, null)] }));
    store.apply(batch({ revisions: [revision(a!, 7, '"a7"', 2), revision(c!, 7, null, 1)] }));
    const stats = await store.pruneHistory(5);
    // a@1 (superseded), b@1 (superseded), b@2 (deletion): 3 documents; key b@1 and its removal @2.
    expect(stats).toEqual({ documentsRemoved: 3, indexEntriesRemoved: 2, receiptsRemoved: 1, minReadableTs: 5 });
    expect(store.changes(5, 100, 100).map((row) => [row.id, row.ts])).toEqual(
      [
        [a, 7],
        [c, 7],
      ].sort((x, y) => (String(x[0]) < String(y[0]) ? -1 : 1)),
    );
    expect(store.get(a!, 5)).toEqual({ value: '"a2"', ts: 2 });
    expect(store.get(b!, 5)).toBeNull();
    expect(store.get(c!, 6)).toEqual({ value: '"c1"', ts: 1 });
    expect(store.receipt("x", 1)).toBeNull();
    expect(store.receipt("x", 2)).toEqual(receipt("x", 2, 5));
    expect(await store.pruneHistory(5)).toEqual({ documentsRemoved: 0, indexEntriesRemoved: 0, receiptsRemoved: 0, minReadableTs: 5 });
    expect(await store.pruneHistory(3)).toEqual({ documentsRemoved: 0, indexEntriesRemoved: 0, receiptsRemoved: 0, minReadableTs: 5 });
    expect(store.meta().minReadableTs).toBe(5);
    const final = await store.pruneHistory(8);
    // a@2 superseded by a@7; c@1 superseded by c@7, which is a deletion; receipts @5 and @6.
    expect(final).toEqual({ documentsRemoved: 3, indexEntriesRemoved: 0, receiptsRemoved: 2, minReadableTs: 8 });
    expect(store.get(a!, 8)).toEqual({ value: '"a7"', ts: 7 });
    expect(store.get(c!, 8)).toBeNull();
  });

  it("works through more rows than one batch and keeps the floor across a reopen", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    const documents = ids(Math.ceil(LOCAL_PRUNE_BATCH_ROWS * 0.6), 1, 53);
    for (let version = 1; version <= 3; version++) {
      store.apply(
        batch({
          revisions: documents.map((id, index) => revision(id, version, version === 3 && index % 2 === 0 ? null : `{"v":${version}}`, version > 1 ? version - 1 : null)),
          indexUpdates: documents.map((id, index) => entry(1, key(index), version, version === 3 && index % 2 === 0 ? null : id)),
          meta: { appliedSeqno: version },
        }),
      );
    }
    const sample = documents.slice(0, 40);
    const expected = readsAt(store, sample, 3);
    const stats = await store.pruneHistory(3);
    const half = documents.length / 2;
    expect(stats.documentsRemoved).toBe(2 * documents.length + half);
    expect(stats.indexEntriesRemoved).toBe(2 * documents.length + half);
    expect(readsAt(store, sample, 3)).toEqual(expected);
    expect(rowCounts(path)).toEqual({ documents: half, indexEntries: half, receipts: 0 });
    store.close();
    const reopened = stores.open(path);
    expect(reopened.meta().minReadableTs).toBe(3);
    expect(readsAt(reopened, sample, 3)).toEqual(expected);
  });

  it("prunes receipts by their own window, and in bounded steps reaches the reads and rows of one call", async () => {
    const stepped = stores.open(dirs.file());
    const whole = stores.open(dirs.file());
    // ~2.5 revisions per round: 6,000 rounds are more revisions than one pruning step covers.
    for (const store of [stepped, whole]) writeHistory(store, 300, 6_000, 54);
    const belowTs = 5_000;
    const receiptsBelowTs = 2_000;
    let steps = 0;
    let sweepPasses = 0;
    for (let done = false, wrapped = false; !(done && wrapped); steps++) {
      const step = await stepped.pruneHistoryStep(belowTs, receiptsBelowTs);
      ({ done } = step);
      wrapped = step.indexSweepWrapped || (done && step.documentsRemoved + step.indexEntriesRemoved + step.receiptsRemoved === 0);
      if (step.indexSweepWrapped) sweepPasses++;
    }
    expect(steps).toBeGreaterThan(1);
    expect(sweepPasses).toBeGreaterThan(0);
    await whole.pruneHistory(belowTs, receiptsBelowTs);
    expect(stepped.meta().minReadableTs).toBe(belowTs);
    expect(stepped.meta().minReadableTs).toBe(whole.meta().minReadableTs);
    const sample = ids(300, 1, 54);
    expect(readsAt(stepped, sample, belowTs)).toEqual(readsAt(whole, sample, belowTs));
    // Documents and receipts are pruned by the steps themselves; index entries by a sweep
    // whose passes started below the final floor may keep a few dead rows (space only).
    const steppedRows = stepped.storedRows();
    expect({ ...steppedRows, indexEntries: 0 }).toEqual({ ...whole.storedRows(), indexEntries: 0 });
    expect(steppedRows.indexEntries).toBeGreaterThanOrEqual(whole.storedRows().indexEntries);
    const receiptAt = (store: LocalStore, ts: number) => store.receipt(`client-${ts % 3}`, ts);
    expect(receiptAt(stepped, receiptsBelowTs - 1)).toBeNull();
    expect(receiptAt(stepped, receiptsBelowTs)).not.toBeNull(); // kept: receipts have their own, shorter window here
    expect(receiptAt(stepped, belowTs - 1)).not.toBeNull();
  });

  it("begins a sweep of the index entries at most once per LOCAL_INDEX_SWEEP_INTERVAL_MS in bounded steps, so routine pruning does not read the whole index every time", async () => {
    const clock = new ManualClock(1_000_000);
    const store = Store.open({ path: dirs.file(), shard: 0, deploymentId: "dep-test", clock });
    try {
      const documents = writeHistory(store, 50, 400, 7);
      const stepUntilDone = async (belowTs: number) => {
        for (;;) if ((await store.pruneHistoryStep(belowTs)).done) return;
      };
      await stepUntilDone(100);
      const afterFirst = store.storedRows().indexEntries;
      const readsAbove = readsAt(store, documents, 300);
      // The floor moves again within the interval: documents go at once, index entries wait.
      const documentsBefore = store.storedRows().documents;
      await stepUntilDone(300);
      expect(store.storedRows().documents).toBeLessThan(documentsBefore);
      expect(store.storedRows().indexEntries).toBe(afterFirst);
      expect(readsAt(store, documents, 300)).toEqual(readsAbove);
      // Once the interval passed, the next step begins the sweep that was owed, though the floor stays.
      clock.advance(LOCAL_INDEX_SWEEP_INTERVAL_MS);
      await stepUntilDone(300);
      expect(store.storedRows().indexEntries).toBeLessThan(afterFirst);
      expect(readsAt(store, documents, 300)).toEqual(readsAbove);
    } finally {
      store.close();
    }
  });
});
