/**
 * Scenario: the overlay and its folds. An applied batch is readable before any fold and
 * stays readable, unchanged, while a fold runs and after it committed; the file holds it
 * only once folded. A fold that fails (the file was damaged under the store) makes the
 * store refuse every later call with LOCAL_FOLD_FAILED instead of acknowledging writes
 * it can no longer fold, and the file still stands at its last committed fold. A batch
 * applied with `recordsChecked` skips the per-row checks but not the shape check.
 */
import { existsSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { LOCAL_FOLD_MIN_BYTES } from "../../src/base/limits.js";
import { LocalStore } from "../../src/local/index.js";
import { DEPLOYMENT, batch, entry, ids, key, localFixtures, revision, thrown } from "./localFixtures.js";

const { dirs, stores } = localFixtures();
const ALL = { start: new Uint8Array(0), end: null };

function walBytes(path: string): number {
  return existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0;
}

function stateAt(store: LocalStore, documentIds: readonly string[], ts: number): unknown {
  return {
    documents: store.getMany(documentIds as never, ts),
    scan: store.indexScan(1, ALL, ts, "asc", 100).map((row) => [row.id, row.value, row.docTs]),
    count: store.count(1, ALL, ts),
  };
}

describe("the overlay", () => {
  it("serves a batch from apply on, the same before, during and after its fold", async () => {
    for (const path of [dirs.file(), ":memory:"]) {
      // Folds only when asked: the batch stays in memory until flush.
      const store = stores.open(path, 0, DEPLOYMENT, { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 });
      const documentIds = ids(20, 1, 41);
      store.apply(
        batch({
          revisions: documentIds.map((id, n) => revision(id, 10, JSON.stringify({ n }))),
          indexUpdates: documentIds.map((id, n) => entry(1, key(n), 10, id)),
          meta: { appliedSeqno: 0, frontierTs: 10 },
        }),
      );
      const expected = stateAt(store, documentIds, 10);
      expect((expected as { count: number }).count).toBe(20);
      expect(store.durableMeta().appliedSeqno).toBe(-1);
      const flushing = store.flush();
      // While the fold is in flight, reads answer as before.
      expect(stateAt(store, documentIds, 10)).toEqual(expected);
      await flushing;
      expect(store.durableMeta().appliedSeqno).toBe(0);
      expect(store.unfoldedRows).toBe(0);
      expect(stateAt(store, documentIds, 10)).toEqual(expected);
    }
  });

  it("folds text byte for byte as TEXT: empty, non-ASCII, astral and NUL characters, and deletions", async () => {
    const path = dirs.file();
    const store = stores.open(path, 0, DEPLOYMENT, { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 });
    const [empty, text, gone] = ids(3, 1, 45);
    const value = JSON.stringify({ s: "h\u00e9llo \u{1F600} \u0000 \u2028 end" });
    store.apply(
      batch({
        revisions: [revision(empty!, 10, ""), revision(text!, 10, value), revision(gone!, 10, null)],
        indexUpdates: [entry(1, key(1), 10, text!), entry(1, key(2), 10, null)],
        meta: { appliedSeqno: 0, frontierTs: 10 },
      }),
    );
    await store.flush();
    expect(store.getMany([empty, text, gone] as never, 10).map((found) => found?.value ?? null)).toEqual(["", value, null]);
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT typeof(id) AS id, typeof(value) AS value FROM documents ORDER BY id").all()).toEqual(
      [empty, text, gone].sort().map((id) => ({ id: "text", value: id === gone ? "null" : "text" })),
    );
    expect(raw.prepare("SELECT typeof(doc_id) FROM index_entries ORDER BY key").pluck().all()).toEqual(["text", "null"]);
    raw.close();
  });

  it("folds at once by bytes, whatever the row threshold, once large documents fill LOCAL_FOLD_MIN_BYTES", async () => {
    const store = stores.open(dirs.file(), 0, DEPLOYMENT, { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 });
    // Under DOCUMENT_BYTES_MAX each: the threshold takes many of them.
    const big = JSON.stringify({ text: "x".repeat(LOCAL_FOLD_MIN_BYTES / 64) });
    const documentIds = ids(66, 1, 43);
    documentIds.forEach((id, n) => {
      store.apply(batch({ revisions: [revision(id, 10 + n, big)], meta: { appliedSeqno: n, frontierTs: 10 + n } }));
    });
    // No flush: the byte threshold alone starts a fold, once 64 of these are held.
    await expect.poll(() => store.durableMeta().appliedSeqno, { timeout: 30_000 }).toBeGreaterThanOrEqual(63);
    expect(store.get(documentIds[65]! as never, 75)?.value).toBe(big);
    expect(store.get(documentIds[0]! as never, 75)?.value).toBe(big);
  });

  it("starts the WAL over while folds follow each other with checkpoints running beside them", async () => {
    const path = dirs.file();
    const restartBytes = 256 * 1024;
    // Folds back to back (every batch is due at once), checkpoints on the other worker.
    const store = stores.open(path, 0, DEPLOYMENT, { minRows: 1, delayMs: 0, walRestartBytes: restartBytes });
    const documentIds = ids(3_000, 1, 44);
    let largestWal = 0;
    for (let n = 0; n < documentIds.length; n += 5) {
      const five = documentIds.slice(n, n + 5);
      store.apply(
        batch({
          revisions: five.map((id) => revision(id, 10 + n, JSON.stringify({ n, pad: "p".repeat(400) }))),
          indexUpdates: five.map((id, k) => entry(1, key(n + k), 10 + n, id)),
          meta: { appliedSeqno: n / 5, frontierTs: 10 + n },
        }),
      );
      await new Promise((resolve) => setImmediate(resolve));
      largestWal = Math.max(largestWal, walBytes(path));
    }
    await store.flush();
    // ~600 folds of a few 16 KiB pages each: a WAL that never started over would hold
    // them all (tens of MiB). It starts over once checkpoints caught up, at the latest
    // when it passed the bound (give or take the few folds a checkpoint runs behind).
    expect(largestWal).toBeLessThan(restartBytes + 4 * 1024 * 1024);
    expect(store.get(documentIds[2_999]!, 10_000)?.value).toContain('"n":2995');
    expect(store.durableMeta().appliedSeqno).toBe(599);
  });

  it("fails every later call with LOCAL_FOLD_FAILED once a fold fails, leaving the file at its last fold", async () => {
    const path = dirs.file();
    const store = stores.open(path, 0, DEPLOYMENT, { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 });
    const [a, b] = ids(2, 1, 42);
    store.apply(batch({ revisions: [revision(a!, 10, "{}")], indexUpdates: [entry(1, key(1), 10, a!)], meta: { appliedSeqno: 0, frontierTs: 10 } }));
    await store.flush();
    // Damage the file under the store: the next fold cannot write its index entries.
    const raw = new Database(path);
    raw.exec("DROP TABLE index_entries");
    raw.close();
    store.apply(batch({ revisions: [revision(b!, 20, "{}")], indexUpdates: [entry(1, key(2), 20, b!)], meta: { appliedSeqno: 1, frontierTs: 20 } }));
    await expect(store.flush()).rejects.toMatchObject({ code: "LOCAL_FOLD_FAILED" });
    expect(thrown(() => store.get(a!, 20)).code).toBe("LOCAL_FOLD_FAILED");
    expect(thrown(() => store.apply(batch({ meta: { appliedSeqno: 2 } }))).code).toBe("LOCAL_FOLD_FAILED");
    await expect(store.pruneHistory(5)).rejects.toMatchObject({ code: "LOCAL_FOLD_FAILED" });
    store.close();
    const check = new Database(path, { readonly: true });
    try {
      expect(check.prepare("SELECT applied_seqno FROM meta").pluck().get()).toBe(0);
      expect(check.prepare("SELECT COUNT(*) FROM documents").pluck().get()).toBe(1);
    } finally {
      check.close();
    }
  });

  it("checks only the shape of a batch whose records were checked before", () => {
    const store = stores.open(":memory:");
    const [a] = ids(1, 1, 43);
    expect(thrown(() => store.apply({ revisions: "no", indexUpdates: [], receipts: [], meta: {} } as never, { recordsChecked: true })).code).toBe(
      "LOCAL_APPLY_INVALID",
    );
    expect(thrown(() => store.apply(null as never, { recordsChecked: true })).code).toBe("LOCAL_APPLY_INVALID");
    // The meta is still checked: appliedSeqno may not go backwards.
    store.apply(batch({ revisions: [revision(a!, 10, "{}")], meta: { appliedSeqno: 3 } }), { recordsChecked: true });
    expect(thrown(() => store.apply(batch({ meta: { appliedSeqno: 2 } }), { recordsChecked: true })).code).toBe("LOCAL_APPLY_INVALID");
    expect(store.get(a!, 10)).toEqual({ value: "{}", ts: 10 });
  });
});
