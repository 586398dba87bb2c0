/**
 * Scenario: reading a store with history. Three documents are written, updated and
 * deleted at ts 10, 20, 30 with matching entries in two indexes; every read method is
 * checked at every interesting ts: the newest row at or below ts wins, deletions hide,
 * scans join documents at the same ts in key order, dangling entries are skipped but
 * counted, and bad arguments fail with typed errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalStore } from "../../src/local/index.js";
import { successorKey } from "../../src/model/KeyRange.js";
import { OpenStores, TempDirs, batch, entry, hex, ids, key, receipt, revision, thrown } from "./localFixtures.js";

const dirs = new TempDirs();
const stores = new OpenStores();
const [A, B, C, GHOST] = ids(4, 1, 21);
const BY_N = 1;
const BY_NAME = 2;
const ALL = { start: new Uint8Array(0), end: null };
let store: LocalStore;

/**
 * ts 10: A {n:1,"a"}, B {n:2,"b"}            ts 20: A → {n:3,"a"}, C {n:4,"c"}
 * ts 30: B deleted                           ts 40: an entry for GHOST, never written (dangling)
 */
beforeAll(() => {
  store = stores.open(dirs.file());
  store.apply(
    batch({
      revisions: [revision(A!, 10, '{"n":1}'), revision(B!, 10, '{"n":2}')],
      indexUpdates: [
        entry(BY_N, key(1), 10, A!),
        entry(BY_N, key(2), 10, B!),
        entry(BY_NAME, key("a"), 10, A!),
        entry(BY_NAME, key("b"), 10, B!),
      ],
      receipts: [receipt("client-1", 1, 10, '"first"')],
      meta: { appliedSeqno: 0, frontierTs: 10 },
    }),
  );
  store.apply(
    batch({
      revisions: [revision(A!, 20, '{"n":3}', 10), revision(C!, 20, '{"n":4}')],
      indexUpdates: [entry(BY_N, key(1), 20, null), entry(BY_N, key(3), 20, A!), entry(BY_N, key(4), 20, C!), entry(BY_NAME, key("c"), 20, C!)],
      meta: { appliedSeqno: 1, frontierTs: 20 },
    }),
  );
  store.apply(
    batch({
      revisions: [revision(B!, 30, null, 10)],
      indexUpdates: [entry(BY_N, key(2), 30, null), entry(BY_NAME, key("b"), 30, null)],
      receipts: [receipt("client-1", 2, 30, '"second"')],
      meta: { appliedSeqno: 2, frontierTs: 30 },
    }),
  );
  store.apply(batch({ indexUpdates: [entry(BY_N, key(5), 40, GHOST!)], meta: { appliedSeqno: 3, frontierTs: 40 } }));
});

afterAll(() => {
  stores.closeAll();
  dirs.cleanup();
});

function scanKeys(indexId: number, range: { start: Uint8Array; end: Uint8Array | null }, ts: number, order: "asc" | "desc", limit: number): string[] {
  return store.indexScan(indexId, range, ts, order, limit).map((row) => hex(row.key));
}

describe("get and getMany", () => {
  it("return the newest revision at or below ts, null before the first and after a deletion", () => {
    expect(store.get(A!, 9)).toBeNull();
    expect(store.get(A!, 10)).toEqual({ value: '{"n":1}', ts: 10 });
    expect(store.get(A!, 19)).toEqual({ value: '{"n":1}', ts: 10 });
    expect(store.get(A!, 20)).toEqual({ value: '{"n":3}', ts: 20 });
    expect(store.get(A!, 1_000)).toEqual({ value: '{"n":3}', ts: 20 });
    expect(store.get(B!, 29)).toEqual({ value: '{"n":2}', ts: 10 });
    expect(store.get(B!, 30)).toBeNull();
    expect(store.get(GHOST!, 100)).toBeNull();
  });

  it("getMany answers one entry per id, in order, with repeats and misses", () => {
    expect(store.getMany([], 20)).toEqual([]);
    expect(store.getMany([C!, GHOST!, A!, C!, B!], 20)).toEqual([
      { value: '{"n":4}', ts: 20 },
      null,
      { value: '{"n":3}', ts: 20 },
      { value: '{"n":4}', ts: 20 },
      { value: '{"n":2}', ts: 10 },
    ]);
    for (const ts of [9, 10, 15, 20, 29, 30, 100]) {
      expect(store.getMany([A!, B!, C!], ts)).toEqual([store.get(A!, ts), store.get(B!, ts), store.get(C!, ts)]);
    }
  });
});

describe("indexScan and count", () => {
  it("returns live entries at ts in key order, joined to the document at the same ts", () => {
    expect(store.indexScan(BY_N, ALL, 10, "asc", 10)).toEqual([
      { key: Buffer.from(key(1)), id: A, value: '{"n":1}', docTs: 10 },
      { key: Buffer.from(key(2)), id: B, value: '{"n":2}', docTs: 10 },
    ]);
    expect(scanKeys(BY_N, ALL, 20, "asc", 10)).toEqual([key(2), key(3), key(4)].map(hex));
    expect(scanKeys(BY_N, ALL, 30, "asc", 10)).toEqual([key(3), key(4)].map(hex));
    expect(scanKeys(BY_N, ALL, 30, "desc", 10)).toEqual([key(4), key(3)].map(hex));
    expect(store.indexScan(BY_NAME, ALL, 25, "desc", 10).map((row) => [row.id, row.docTs])).toEqual([
      [C, 20],
      [B, 10],
      [A, 20],
    ]);
  });

  it("honours half-open ranges, unbounded ends, empty and inverted ranges, and limits", () => {
    expect(scanKeys(BY_N, { start: key(2), end: key(4) }, 20, "asc", 10)).toEqual([key(2), key(3)].map(hex));
    expect(scanKeys(BY_N, { start: key(2), end: key(4) }, 20, "desc", 10)).toEqual([key(3), key(2)].map(hex));
    expect(scanKeys(BY_N, { start: successorKey(key(2)), end: null }, 20, "asc", 10)).toEqual([key(3), key(4)].map(hex));
    expect(scanKeys(BY_N, { start: key(3), end: key(3) }, 20, "asc", 10)).toEqual([]);
    expect(scanKeys(BY_N, { start: key(4), end: key(2) }, 20, "asc", 10)).toEqual([]);
    expect(scanKeys(BY_N, ALL, 20, "asc", 2)).toEqual([key(2), key(3)].map(hex));
    expect(scanKeys(BY_N, ALL, 20, "desc", 1)).toEqual([key(4)].map(hex));
    expect(scanKeys(BY_N, ALL, 20, "asc", 0)).toEqual([]);
    expect(store.count(BY_N, { start: key(2), end: key(4) }, 20)).toBe(2);
    expect(store.count(BY_N, { start: key(4), end: key(2) }, 20)).toBe(0);
    expect(scanKeys(99, ALL, 20, "asc", 10)).toEqual([]);
  });

  it("skips a dangling entry, counts it, and still fills the limit", () => {
    const skippedBefore = store.danglingIndexEntriesSkipped;
    // At ts 40 BY_N holds 3, 4 and 5 (GHOST: no document).
    expect(scanKeys(BY_N, ALL, 40, "desc", 2)).toEqual([key(4), key(3)].map(hex));
    expect(store.danglingIndexEntriesSkipped).toBe(skippedBefore + 1);
    expect(scanKeys(BY_N, ALL, 40, "asc", 10)).toEqual([key(3), key(4)].map(hex));
    expect(store.count(BY_N, ALL, 40)).toBe(2);
  });

  it("count equals the length of an unlimited scan at every ts", () => {
    for (const ts of [0, 10, 15, 20, 25, 30, 40]) {
      for (const indexId of [BY_N, BY_NAME]) {
        expect(store.count(indexId, ALL, ts)).toBe(store.indexScan(indexId, ALL, ts, "asc", 1_000).length);
      }
    }
  });
});

describe("changes, receipts and maxTs", () => {
  it("lists revisions in (afterTs, throughTs] by ts, then id, up to limit", () => {
    expect(store.changes(-1, 10, 10).map((row) => row.ts)).toEqual([10, 10]);
    expect(store.changes(10, 30, 10)).toEqual([
      ...[revision(A!, 20, '{"n":3}', 10), revision(C!, 20, '{"n":4}')].sort((x, y) => (x.id < y.id ? -1 : 1)),
      revision(B!, 30, null, 10),
    ]);
    expect(store.changes(10, 30, 1)).toHaveLength(1);
    expect(store.changes(30, 30, 10)).toEqual([]);
    expect(store.changes(30, 20, 10)).toEqual([]);
    expect(store.changes(0, 100, 0)).toEqual([]);
  });

  it("finds receipts by (clientId, seq)", () => {
    expect(store.receipt("client-1", 1)).toEqual(receipt("client-1", 1, 10, '"first"'));
    expect(store.receipt("client-1", 2)).toEqual(receipt("client-1", 2, 30, '"second"'));
    expect(store.receipt("client-1", 3)).toBeNull();
    expect(store.receipt("client-2", 1)).toBeNull();
  });

  it("maxTs is the highest revision ts", () => {
    expect(store.maxTs()).toBe(30);
  });
});

describe("bad arguments", () => {
  it("fail with typed errors", async () => {
    const cases: [() => unknown, string][] = [
      [() => store.get(A!, -1), "INVALID_ARGUMENT"],
      [() => store.get(A!, 1.5), "INVALID_ARGUMENT"],
      [() => store.get(5 as unknown as typeof A, 10), "INVALID_ARGUMENT"],
      [() => store.getMany("x" as unknown as [], 10), "INVALID_ARGUMENT"],
      [() => store.getMany([A!, null as unknown as typeof A], 10), "INVALID_ARGUMENT"],
      [() => store.indexScan(-1, ALL, 10, "asc", 1), "INVALID_ARGUMENT"],
      [() => store.indexScan(1, { start: "a" as unknown as Uint8Array, end: null }, 10, "asc", 1), "KEY_RANGE_INVALID"],
      [() => store.indexScan(1, { start: key(1), end: "z" as unknown as Uint8Array }, 10, "asc", 1), "KEY_RANGE_INVALID"],
      [() => store.indexScan(1, ALL, 10, "up" as "asc", 1), "INVALID_ARGUMENT"],
      [() => store.indexScan(1, ALL, 10, "asc", -1), "INVALID_ARGUMENT"],
      [() => store.count(1, ALL, Number.NaN), "INVALID_ARGUMENT"],
      [() => store.changes(-2, 10, 1), "INVALID_ARGUMENT"],
      [() => store.changes(0, -1, 1), "INVALID_ARGUMENT"],
      [() => store.changes(0, 10, 0.5), "INVALID_ARGUMENT"],
      [() => store.receipt(1 as unknown as string, 1), "INVALID_ARGUMENT"],
      [() => store.receipt("c", -1), "INVALID_ARGUMENT"],
    ];
    for (const [call, code] of cases) expect(thrown(call).code).toBe(code);
    await expect(store.openDumpCursor({ rowsPerChunk: 0 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(store.pruneHistory(-1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});

describe("reads below the readable floor", () => {
  it("fail with LOCAL_HISTORY_UNAVAILABLE once history is pruned", async () => {
    const pruned = stores.open(":memory:");
    pruned.apply(batch({ revisions: [revision(A!, 10, "{}")], indexUpdates: [entry(1, key(1), 10, A!)] }));
    await pruned.pruneHistory(15);
    const range = ALL;
    for (const call of [
      () => pruned.get(A!, 14),
      () => pruned.getMany([A!], 14),
      () => pruned.indexScan(1, range, 14, "asc", 1),
      () => pruned.count(1, range, 14),
      () => pruned.changes(14, 20, 10),
      () => pruned.changes(-1, 20, 10),
    ]) {
      expect(thrown(call).code).toBe("LOCAL_HISTORY_UNAVAILABLE");
    }
    expect(pruned.get(A!, 15)).toEqual({ value: "{}", ts: 10 });
    expect(pruned.count(1, range, 15)).toBe(1);
    expect(pruned.changes(15, 20, 10)).toEqual([]);
  });
});
