/**
 * Scenario: dumping current state. A dump holds each document's and each index key's
 * newest row unless it is a deletion, plus every receipt, in bounded chunks; it reflects
 * one instant even while batches keep being applied, on a file store (second connection,
 * WAL read transaction) and on an in-memory store (serialized copy).
 */
import { describe, expect, it } from "vitest";
import { DOCUMENT_BYTES_MAX, LOCAL_DUMP_CHUNK_BYTES_MAX, LOCAL_DUMP_ROWS_PER_CHUNK } from "../../src/base/limits.js";
import type { DumpChunk, LocalStore } from "../../src/local/index.js";
import { batch, drainDump, entry, hex, ids, key, receipt, revision, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

type RowOf<Kind extends DumpChunk["kind"]> = Extract<DumpChunk, { kind: Kind }>["rows"][number];

function rowsOf<Kind extends DumpChunk["kind"]>(chunks: DumpChunk[], kind: Kind): RowOf<Kind>[] {
  return chunks.filter((chunk) => chunk.kind === kind).flatMap((chunk) => chunk.rows as readonly unknown[]) as RowOf<Kind>[];
}

async function eachStore(run: (store: LocalStore) => Promise<void>): Promise<void> {
  for (const path of [dirs.file(), ":memory:"]) await run(stores.open(path));
}

describe("openDumpCursor", () => {
  it("dumps current, non-deleted state with the meta it reflects", async () => {
    const [a, b, c] = ids(3, 1, 31);
    await eachStore(async (store) => {
      store.apply(
        batch({
          revisions: [revision(a!, 10, '{"v":1}'), revision(b!, 10, '{"v":2}'), revision(c!, 10, '{"v":3}')],
          indexUpdates: [entry(1, key(1), 10, a!), entry(1, key(2), 10, b!), entry(1, key(3), 10, c!)],
          receipts: [receipt("r", 1, 10)],
          meta: { appliedSeqno: 0, epoch: 3, lastHash: "h0", frontierTs: 10 },
        }),
      );
      store.apply(
        batch({
          revisions: [revision(a!, 20, '{"v":10}', 10), revision(b!, 20, null, 10)],
          indexUpdates: [entry(1, key(1), 20, null), entry(1, key(10), 20, a!), entry(1, key(2), 20, null)],
          receipts: [receipt("r", 2, 20)],
          meta: { appliedSeqno: 1, lastHash: "h1", frontierTs: 20 },
        }),
      );
      const cursor = await store.openDumpCursor();
      expect(cursor.meta).toEqual(store.meta());
      const chunks = drainDump(cursor);
      expect(chunks.map((chunk) => chunk.kind)).toEqual(["documents", "indexEntries", "receipts"]);
      expect(rowsOf(chunks, "documents")).toEqual(
        [revision(a!, 20, '{"v":10}', 10), revision(c!, 10, '{"v":3}')].sort((x, y) => (x.id < y.id ? -1 : 1)),
      );
      expect(rowsOf(chunks, "indexEntries").map((row) => [hex(row.key), row.ts, row.docId])).toEqual([
        [hex(key(3)), 10, c],
        [hex(key(10)), 20, a],
      ]);
      expect(rowsOf(chunks, "receipts")).toEqual([receipt("r", 1, 10), receipt("r", 2, 20)]);
    });
  });

  it("is an empty dump for an empty store", async () => {
    await eachStore(async (store) => {
      const cursor = await store.openDumpCursor();
      expect(cursor.meta.appliedSeqno).toBe(-1);
      expect(drainDump(cursor)).toEqual([]);
    });
  });

  it("cuts chunks by row count and by bytes", async () => {
    const many = ids(LOCAL_DUMP_ROWS_PER_CHUNK + 5, 1, 32);
    const store = stores.open(dirs.file());
    store.apply(batch({ revisions: many.map((id) => revision(id, 1, "{}")) }));
    expect(drainDump(await store.openDumpCursor()).map((chunk) => chunk.rows.length)).toEqual([LOCAL_DUMP_ROWS_PER_CHUNK, 5]);
    expect(drainDump(await store.openDumpCursor({ rowsPerChunk: 400 })).map((chunk) => chunk.rows.length)).toEqual([400, 400, 205]);

    // Documents of the largest allowed size: the byte bound cuts long before the row bound.
    const bigValue = `"${"x".repeat(DOCUMENT_BYTES_MAX - 2)}"`;
    const perChunk = Math.ceil(LOCAL_DUMP_CHUNK_BYTES_MAX / DOCUMENT_BYTES_MAX);
    const big = ids(2 * perChunk + 1, 1, 33);
    const bigStore = stores.open(dirs.file());
    bigStore.apply(batch({ revisions: big.map((id) => revision(id, 1, bigValue)) }));
    const sizes = drainDump(await bigStore.openDumpCursor()).map((chunk) => chunk.rows.length);
    expect(sizes).toEqual([perChunk, perChunk, 1]);
  });

  it("keeps its point in time while batches are applied between chunks", async () => {
    const first = ids(50, 1, 34);
    const later = ids(50, 1, 35);
    await eachStore(async (store) => {
      store.apply(
        batch({
          revisions: first.map((id) => revision(id, 10, '{"old":true}')),
          indexUpdates: first.map((id, index) => entry(1, key(index), 10, id)),
          meta: { appliedSeqno: 0, frontierTs: 10 },
        }),
      );
      const cursor = await store.openDumpCursor({ rowsPerChunk: 7 });
      const chunks: DumpChunk[] = [];
      let seqno = 1;
      for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) {
        chunks.push(chunk);
        // Overwrite, delete and add while the dump is half read.
        store.apply(
          batch({
            revisions: [revision(first[seqno % 50]!, 10 + seqno, null, 10), revision(later[seqno % 50]!, 10 + seqno, '{"new":true}')],
            indexUpdates: [entry(1, key(seqno % 50), 10 + seqno, null), entry(1, key(1000 + seqno), 10 + seqno, later[seqno % 50]!)],
            meta: { appliedSeqno: seqno, frontierTs: 10 + seqno },
          }),
        );
        seqno++;
      }
      cursor.close();
      expect(cursor.meta.appliedSeqno).toBe(0);
      expect(store.meta().appliedSeqno).toBeGreaterThan(5);
      const documents = rowsOf(chunks, "documents");
      expect(documents).toHaveLength(50);
      expect(documents.every((row) => row.value === '{"old":true}' && row.ts === 10)).toBe(true);
      expect(rowsOf(chunks, "indexEntries").map((row) => hex(row.key)).sort()).toEqual(first.map((_, index) => hex(key(index))).sort());
    });
  });

  it("refuses next() after close, closes idempotently, and is closed with its store", async () => {
    const [a] = ids(1, 1, 36);
    const store = stores.open(dirs.file());
    store.apply(batch({ revisions: [revision(a!, 1, "{}")] }));
    const cursor = await store.openDumpCursor();
    cursor.close();
    cursor.close();
    expect(thrown(() => cursor.next()).code).toBe("LOCAL_CLOSED");
    const open = await store.openDumpCursor();
    store.close();
    expect(thrown(() => open.next()).code).toBe("LOCAL_CLOSED");
  });
});
