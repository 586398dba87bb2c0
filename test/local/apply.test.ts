/**
 * Scenario: applying segment batches. A batch lands with its meta in one transaction;
 * re-applying it (same appliedSeqno) changes nothing; a batch that fails any check is
 * refused with LOCAL_APPLY_INVALID and leaves data and meta exactly as they were, on a
 * file store and on an in-memory one.
 */
import { describe, expect, it } from "vitest";
import { DOCUMENT_BYTES_MAX } from "../../src/base/limits.js";
import type { ApplyBatch, LocalStore } from "../../src/local/index.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { batch, entry, hex, ids, key, receipt, revision, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

const ALL = { start: new Uint8Array(0), end: null };
const [A, B, OTHER_TABLE] = [...ids(2, 1, 11), ...ids(1, 2, 12)] as DocumentId[];

function firstBatch(): ApplyBatch {
  return batch({
    revisions: [revision(A!, 10, '{"n":1}'), revision(B!, 10, '{"n":2}')],
    indexUpdates: [entry(1, key(1), 10, A!), entry(1, key(2), 10, B!)],
    receipts: [receipt("client", 1, 10)],
    meta: { appliedSeqno: 0, epoch: 1, lastHash: "h0", frontierTs: 10 },
  });
}

/** Everything observable, for "nothing changed" comparisons. */
function snapshotOf(store: LocalStore): unknown {
  const floor = store.meta().minReadableTs;
  const ts = Math.max(store.maxTs(), floor);
  return {
    meta: store.meta(),
    maxTs: store.maxTs(),
    changes: store.changes(floor > 0 ? floor : -1, 1_000_000, 1000),
    scan: store.indexScan(1, ALL, ts, "asc", 1000).map((row) => ({ ...row, key: hex(row.key) })),
    receipt: store.receipt("client", 1),
  };
}

function eachStore(run: (store: LocalStore) => void): void {
  for (const path of [dirs.file(), ":memory:"]) run(stores.open(path));
}

describe("LocalStore.apply", () => {
  it("writes revisions, index updates, receipts and meta together", () => {
    eachStore((store) => {
      store.apply(firstBatch());
      expect(store.meta()).toMatchObject({ appliedSeqno: 0, epoch: 1, lastHash: "h0", frontierTs: 10, minReadableTs: 0 });
      expect(store.get(A!, 10)).toEqual({ value: '{"n":1}', ts: 10 });
      expect(store.count(1, ALL, 10)).toBe(2);
      expect(store.receipt("client", 1)).toEqual(receipt("client", 1, 10));
      expect(store.maxTs()).toBe(10);
    });
  });

  it("leaves meta fields a batch does not mention as they were", () => {
    eachStore((store) => {
      store.apply(firstBatch());
      store.apply(batch({ meta: { appliedSeqno: 1 } }));
      expect(store.meta()).toMatchObject({ appliedSeqno: 1, epoch: 1, lastHash: "h0", frontierTs: 10 });
      store.apply(batch({ meta: { lastHash: null } }));
      expect(store.meta().lastHash).toBeNull();
    });
  });

  it("is idempotent: re-applying a batch at the same appliedSeqno changes nothing", () => {
    eachStore((store) => {
      store.apply(firstBatch());
      const before = snapshotOf(store);
      store.apply(firstBatch());
      expect(snapshotOf(store)).toEqual(before);
    });
  });

  it("overwrites a row by (key, ts)", () => {
    eachStore((store) => {
      store.apply(firstBatch());
      store.apply(
        batch({
          revisions: [revision(A!, 10, '{"n":9}')],
          indexUpdates: [entry(1, key(1), 10, null)],
          receipts: [receipt("client", 1, 10, '"again"')],
          meta: { appliedSeqno: 0 },
        }),
      );
      expect(store.get(A!, 10)).toEqual({ value: '{"n":9}', ts: 10 });
      expect(store.indexScan(1, ALL, 10, "asc", 10).map((row) => row.id)).toEqual([B]);
      expect(store.receipt("client", 1)?.result).toBe('"again"');
      expect(store.changes(-1, 100, 100)).toHaveLength(2);
    });
  });

  const invalidBatches: [string, ApplyBatch][] = [
    ["an id of another table", batch({ revisions: [revision(OTHER_TABLE!, 20, "{}")] })],
    ["a malformed id", batch({ revisions: [revision("not-an-id" as DocumentId, 20, "{}")] })],
    ["an id in upper case", batch({ revisions: [revision(A!.toUpperCase() as DocumentId, 20, "{}")] })],
    ["a negative ts", batch({ revisions: [revision(A!, -1, "{}")] })],
    ["a fractional ts", batch({ revisions: [revision(A!, 20.5, "{}")] })],
    ["a ts beyond 2^53", batch({ revisions: [revision(A!, 2 ** 53, "{}")] })],
    ["a prevTs not below ts", batch({ revisions: [revision(A!, 20, "{}", 20)] })],
    ["a value that is not text", batch({ revisions: [{ ...revision(A!, 20, "{}"), value: 5 as unknown as string }] })],
    ["a value over DOCUMENT_BYTES_MAX", batch({ revisions: [revision(A!, 20, `"${"é".repeat(DOCUMENT_BYTES_MAX / 2)}"`)] })],
    ["an invalid index key", batch({ indexUpdates: [entry(1, Uint8Array.of(0xee, 0x01), 20, A!)] })],
    ["a truncated index key", batch({ indexUpdates: [entry(1, key("abc").subarray(0, 3), 20, A!)] })],
    ["a key that is not bytes", batch({ indexUpdates: [entry(1, "k" as unknown as Uint8Array, 20, A!)] })],
    ["a negative index id", batch({ indexUpdates: [entry(-1, key(1), 20, A!)] })],
    ["an index doc id that is malformed", batch({ indexUpdates: [entry(1, key(1), 20, "zz" as DocumentId)] })],
    ["an empty client id", batch({ receipts: [receipt("", 1, 20)] })],
    ["a negative receipt seq", batch({ receipts: [receipt("c", -1, 20)] })],
    ["a receipt result that is not text", batch({ receipts: [{ ...receipt("c", 1, 20), result: null as unknown as string }] })],
    ["rows that are not an array", { ...batch({}), revisions: {} as unknown as [] }],
    ["appliedSeqno going backwards", batch({ meta: { appliedSeqno: -1 } })],
    ["a fractional appliedSeqno", batch({ meta: { appliedSeqno: 1.5 } })],
    ["a negative epoch", batch({ meta: { epoch: -1 } })],
    ["an empty lastHash", batch({ meta: { lastHash: "" } })],
    ["a negative frontierTs", batch({ meta: { frontierTs: -5 } })],
    ["a missing meta", { ...batch({}), meta: undefined as unknown as {} }],
  ];

  it.each(invalidBatches)("refuses %s and changes nothing", (_name, invalid) => {
    eachStore((store) => {
      store.apply(firstBatch());
      const before = snapshotOf(store);
      // A valid row first proves the check runs before anything is written.
      const withValidRows: ApplyBatch = {
        ...invalid,
        revisions: Array.isArray(invalid.revisions) ? [revision(B!, 30, '{"n":3}'), ...invalid.revisions] : invalid.revisions,
        indexUpdates: [entry(1, key(3), 30, B!), ...invalid.indexUpdates],
        meta: invalid.meta === undefined ? invalid.meta : { appliedSeqno: 1, ...invalid.meta },
      };
      const error = thrown(() => store.apply(withValidRows));
      expect(error.code).toBe("LOCAL_APPLY_INVALID");
      expect(snapshotOf(store)).toEqual(before);
    });
  });

  it("names the bad row and keeps the model's error as the cause", () => {
    const store = stores.open(":memory:");
    const error = thrown(() =>
      store.apply(batch({ revisions: [revision(A!, 1, "{}"), revision(OTHER_TABLE!, 1, "{}")] })),
    ) as unknown as { code: string; message: string; details: Record<string, unknown>; cause: { code: string } };
    expect(error.details).toEqual({ kind: "revision", position: 1 });
    expect(error.cause.code).toBe("DOCUMENT_ID_WRONG_TABLE");
  });

  it("accepts a value of exactly DOCUMENT_BYTES_MAX bytes", () => {
    const store = stores.open(":memory:");
    const value = `"${"x".repeat(DOCUMENT_BYTES_MAX - 2)}"`;
    store.apply(batch({ revisions: [revision(A!, 1, value)] }));
    expect(store.get(A!, 1)?.value.length).toBe(DOCUMENT_BYTES_MAX);
  });

  it("refuses rows below the readable floor after pruning", async () => {
    for (const path of [dirs.file(), ":memory:"]) {
      const store = stores.open(path);
      store.apply(firstBatch());
      await store.pruneHistory(50);
      const before = snapshotOf(store);
      for (const invalid of [
        batch({ revisions: [revision(A!, 49, "{}")] }),
        batch({ indexUpdates: [entry(1, key(5), 49, A!)] }),
        batch({ receipts: [receipt("c", 2, 49)] }),
      ]) {
        expect(thrown(() => store.apply(invalid)).code).toBe("LOCAL_APPLY_INVALID");
      }
      expect(snapshotOf(store)).toEqual(before);
      store.apply(batch({ revisions: [revision(A!, 50, '{"n":50}')] }));
      expect(store.get(A!, 50)).toEqual({ value: '{"n":50}', ts: 50 });
    }
  });
});
