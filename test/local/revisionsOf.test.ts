/**
 * Scenario: a document's history as the admin API shows it. One document is inserted,
 * updated, deleted, re-inserted and updated again; some of its revisions are folded into
 * the SQLite file and some are still in the overlay, and another document's revisions
 * are interleaved at the same timestamps. `revisionsOf` must list exactly its revisions,
 * newest first, deletions included, merged from both places as `get` merges them; after
 * pruning only the revisions pruning keeps; at most `limit`; and refuse bad arguments.
 */
import { describe, expect, it } from "vitest";
import { LOCAL_HISTORY_REVISIONS_MAX } from "../../src/base/limits.js";
import type { LocalStore } from "../../src/local/index.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { batch, DEPLOYMENT, ids, localFixtures, revision, thrown } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

/** Folds only when a test flushes (or prunes). */
const MANUAL_FOLD = { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 };

/** ts 1 insert, 2 update, folded; 4 delete, folded; 6 re-insert, 8 update, in the overlay. `other` changes at 2, 4 and 9. */
async function writeHistory(store: LocalStore, id: DocumentId, other: DocumentId): Promise<void> {
  store.apply(batch({ revisions: [revision(id, 1, '{"v":1}')], meta: { appliedSeqno: 1, frontierTs: 1 } }));
  store.apply(batch({ revisions: [revision(id, 2, '{"v":2}', 1), revision(other, 2, '"o2"')], meta: { appliedSeqno: 2, frontierTs: 2 } }));
  await store.flush();
  store.apply(batch({ revisions: [revision(id, 4, null, 2), revision(other, 4, '"o4"', 2)], meta: { appliedSeqno: 3, frontierTs: 4 } }));
  await store.flush();
  store.apply(batch({ revisions: [revision(id, 6, '{"v":3}')], meta: { appliedSeqno: 4, frontierTs: 6 } }));
  store.apply(batch({ revisions: [revision(id, 8, '{"v":4}', 6)], meta: { appliedSeqno: 5, frontierTs: 8 } }));
  store.apply(batch({ revisions: [revision(other, 9, null, 4)], meta: { appliedSeqno: 6, frontierTs: 9 } }));
}

const FULL_HISTORY = [
  { ts: 8, value: '{"v":4}' },
  { ts: 6, value: '{"v":3}' },
  { ts: 4, value: null },
  { ts: 2, value: '{"v":2}' },
  { ts: 1, value: '{"v":1}' },
];

describe("LocalStore.revisionsOf", () => {
  it("lists a document's revisions newest first, deletions included, from the overlay and the file", async () => {
    for (const path of [dirs.file(), ":memory:"]) {
      const store = stores.open(path, 0, DEPLOYMENT, MANUAL_FOLD);
      const [id, other] = ids(2, 1, 71) as [DocumentId, DocumentId];
      await writeHistory(store, id, other);
      expect(store.unfoldedRows).toBe(3);
      expect(store.revisionsOf(id, 100)).toEqual(FULL_HISTORY);
      expect(store.revisionsOf(other, 100)).toEqual([
        { ts: 9, value: null },
        { ts: 4, value: '"o4"' },
        { ts: 2, value: '"o2"' },
      ]);
      // The same once everything is in the file.
      await store.flush();
      expect(store.unfoldedRows).toBe(0);
      expect(store.revisionsOf(id, 100)).toEqual(FULL_HISTORY);
      // Each revision is what `get` reads at its ts (a deletion: null).
      for (const { ts, value } of FULL_HISTORY) {
        expect(store.get(id, ts)).toEqual(value === null ? null : { ts, value });
      }
    }
  });

  it("returns at most `limit`, the newest ones", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, MANUAL_FOLD);
    const [id, other] = ids(2, 1, 72) as [DocumentId, DocumentId];
    await writeHistory(store, id, other);
    expect(store.revisionsOf(id, 1)).toEqual(FULL_HISTORY.slice(0, 1));
    expect(store.revisionsOf(id, 3)).toEqual(FULL_HISTORY.slice(0, 3));
    expect(store.revisionsOf(id, 5)).toEqual(FULL_HISTORY);
    expect(store.revisionsOf(id, 6)).toEqual(FULL_HISTORY);
  });

  it("walks more revisions than the limit allows, across folds, to exactly the limit", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, MANUAL_FOLD);
    const [id] = ids(1, 1, 73) as [DocumentId];
    const count = LOCAL_HISTORY_REVISIONS_MAX + 20;
    for (let ts = 1; ts <= count; ts++) {
      // Every third revision a deletion; a fold every 7 batches, so the history alternates between file and overlay.
      const value = ts % 3 === 0 ? null : JSON.stringify({ ts });
      store.apply(batch({ revisions: [revision(id, ts * 10, value)], meta: { appliedSeqno: ts, frontierTs: ts * 10 } }));
      if (ts % 7 === 0) await store.flush();
    }
    expect(store.unfoldedRows).toBeGreaterThan(0);
    const revisions = store.revisionsOf(id, LOCAL_HISTORY_REVISIONS_MAX);
    expect(revisions).toHaveLength(LOCAL_HISTORY_REVISIONS_MAX);
    expect(revisions.map((revision) => revision.ts)).toEqual(Array.from({ length: LOCAL_HISTORY_REVISIONS_MAX }, (_, index) => (count - index) * 10));
    for (const { ts, value } of revisions) expect(value).toBe(ts % 30 === 0 ? null : JSON.stringify({ ts: ts / 10 }));
  });

  it("after pruning lists only the revisions pruning kept", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, MANUAL_FOLD);
    const [id, other] = ids(2, 1, 74) as [DocumentId, DocumentId];
    await writeHistory(store, id, other);
    // Below 3: the revision at 2 is what a read at 3 sees, so it stays; the one at 1 goes.
    await store.pruneHistory(3);
    expect(store.meta().minReadableTs).toBe(3);
    expect(store.revisionsOf(id, 100)).toEqual(FULL_HISTORY.slice(0, 4));
    // Below 5: the newest at or below 5 is the deletion at 4, so it and everything older go.
    await store.pruneHistory(5);
    expect(store.meta().minReadableTs).toBe(5);
    expect(store.revisionsOf(id, 100)).toEqual(FULL_HISTORY.slice(0, 2));
    // `other` at 4 is what a read at 5 sees: it stays, the one at 2 goes.
    expect(store.revisionsOf(other, 100)).toEqual([
      { ts: 9, value: null },
      { ts: 4, value: '"o4"' },
    ]);
    // Pruning below 5 folded nothing (the overlay's rows are all above): 6, 8 and 9 are
    // still there, and a revision applied after the prune joins them.
    store.apply(batch({ revisions: [revision(id, 12, '{"v":5}', 8)], meta: { appliedSeqno: 7, frontierTs: 12 } }));
    expect(store.unfoldedRows).toBe(4);
    expect(store.revisionsOf(id, 100)).toEqual([{ ts: 12, value: '{"v":5}' }, ...FULL_HISTORY.slice(0, 2)]);
    // Below 9 the overlay's rows at 6 and 8 must be folded first; 8 is what a read at 9 sees, 6 goes.
    await store.pruneHistory(9);
    expect(store.unfoldedRows).toBe(0);
    expect(store.revisionsOf(id, 100)).toEqual([{ ts: 12, value: '{"v":5}' }, FULL_HISTORY[0]]);
    // `other` was deleted at 9: the deletion goes with everything before it, leaving no history.
    expect(store.revisionsOf(other, 100)).toEqual([]);
  });

  it("has nothing for an unknown id or a string that is no id", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, MANUAL_FOLD);
    const [id, other, unknown] = ids(3, 1, 75) as [DocumentId, DocumentId, DocumentId];
    await writeHistory(store, id, other);
    expect(store.revisionsOf(unknown, 10)).toEqual([]);
    expect(store.revisionsOf("" as DocumentId, 10)).toEqual([]);
    expect(store.revisionsOf("not an id" as DocumentId, 10)).toEqual([]);
  });

  it("refuses a limit outside 1..100 and an id that is not a string", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, MANUAL_FOLD);
    const [id, other] = ids(2, 1, 76) as [DocumentId, DocumentId];
    await writeHistory(store, id, other);
    for (const limit of [0, -1, LOCAL_HISTORY_REVISIONS_MAX + 1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "3", null, undefined]) {
      const error = thrown(() => store.revisionsOf(id, limit as number));
      expect(error.code, String(limit)).toBe("INVALID_ARGUMENT");
    }
    for (const badId of [42, null, undefined, { id }, [id]]) {
      expect(thrown(() => store.revisionsOf(badId as unknown as DocumentId, 10)).code).toBe("INVALID_ARGUMENT");
    }
    store.close();
    expect(thrown(() => store.revisionsOf(id, 10)).code).toBe("LOCAL_CLOSED");
  });
});
