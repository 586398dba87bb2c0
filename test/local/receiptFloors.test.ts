/**
 * Scenario: receipts with owners and client floors in a shard's local store. A receipt
 * carrying the client's floor (its ackedThrough + 1) makes the floor readable at once
 * (from the overlay), and once folded the client's receipts below it are gone, while
 * another owner's receipts of the same clientId and other clients' receipts stay. The
 * owner and the floor survive a reopen, a dump and restore, and a snapshot written to a
 * bucket and restored into another store.
 */
import { describe, expect, it } from "vitest";
import type { ClientReceipt } from "../../src/model/Revision.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { restoreSnapshot } from "../../src/snapshots/restoreSnapshot.js";
import { writeSnapshot } from "../../src/snapshots/writeSnapshot.js";
import { batch, DEPLOYMENT, localFixtures } from "./localFixtures.js";
import type { LocalStore } from "../../src/local/index.js";

const { dirs, stores } = localFixtures();

function owned(clientId: string, seq: number, ts: number, owner: string, floorSeq = 0): ClientReceipt {
  return { clientId, seq, ts, result: `{"seq":${seq}}`, route: null, owner, ...(floorSeq > 0 ? { floorSeq } : {}) };
}

/** Ada's phone sends 1..3, then 4 acknowledging 1..3; Eve names the same clientId; Bob is another client. */
function seed(store: LocalStore): void {
  store.apply(
    batch({
      receipts: [owned("phone", 1, 10, "user:ada"), owned("phone", 2, 11, "user:ada"), owned("phone", 3, 12, "user:ada"), owned("bob", 1, 12, "user:bob")],
      meta: { appliedSeqno: 0, frontierTs: 12 },
    }),
  );
  store.apply(batch({ receipts: [owned("phone", 7, 13, "user:eve")], meta: { appliedSeqno: 1, frontierTs: 13 } }));
  store.apply(batch({ receipts: [owned("phone", 4, 14, "user:ada", 4)], meta: { appliedSeqno: 2, frontierTs: 14 } }));
}

function expectFloored(store: LocalStore): void {
  expect(store.receiptFloor("phone", "user:ada")).toBe(4);
  expect(store.receiptFloor("phone", "user:eve")).toBe(0);
  expect(store.receiptFloor("bob", "user:bob")).toBe(0);
  expect(store.receipt("phone", 4)).toEqual(owned("phone", 4, 14, "user:ada", 4));
  expect(store.receipt("phone", 7)).toEqual(owned("phone", 7, 13, "user:eve"));
  expect(store.receipt("bob", 1)).toEqual(owned("bob", 1, 12, "user:bob"));
}

describe("receipt floors", () => {
  it("reads the floor from the overlay at once and prunes the client's receipts below it when folded", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    seed(store);
    expect(store.receiptFloor("phone", "user:ada")).toBe(4);
    await store.flush();
    expectFloored(store);
    for (const seq of [1, 2, 3]) expect(store.receipt("phone", seq)).toBeNull();
    expect(store.storedRows().receipts).toBe(3);
    store.close();
    expectFloored(stores.open(path));
  });

  it("keeps owners and floors through a dump and restore", async () => {
    const source = stores.open(dirs.file());
    seed(source);
    await source.flush();
    const cursor = await source.openDumpCursor({ rowsPerChunk: 1 });
    const chunks = [];
    for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) chunks.push(chunk);
    cursor.close();
    const target = stores.open(dirs.file());
    await target.restore(
      (async function* () {
        yield* chunks;
      })(),
      { appliedSeqno: 2, epoch: 1, lastHash: null, frontierTs: 14 },
    );
    expectFloored(target);
  });

  it("keeps owners and floors through a snapshot in the bucket", async () => {
    const bucket = new MemoryObjectStore();
    const source = stores.open(":memory:", 0, DEPLOYMENT);
    seed(source);
    await source.flush();
    const pointer = await writeSnapshot({ store: bucket, deploymentId: DEPLOYMENT, shard: 0, cursor: await source.openDumpCursor(), attemptId: "1-floors" });
    const target = stores.open(":memory:", 0, DEPLOYMENT);
    await restoreSnapshot({ store: bucket, deploymentId: DEPLOYMENT, shard: 0, pointer, local: target });
    expectFloored(target);
  });

  it("answers every floor read, remembered or not, as the store holds it: after a raise, a fold, a prune and a reset", async () => {
    const path = dirs.file();
    const store = stores.open(path);
    // What a store that never read a floor before answers: the truth, from the file.
    const fresh = async (clientId: string, owner: string | null) => {
      await store.flush();
      const other = stores.open(path);
      try {
        return other.receiptFloor(clientId, owner);
      } finally {
        other.close();
      }
    };
    seed(store);
    expect(store.receiptFloor("phone", "user:ada")).toBe(4); // now remembered
    expect(store.receiptFloor("phone", "")).toBe(0);
    // A receipt raising a remembered floor, read before and after its fold.
    store.apply(batch({ receipts: [owned("phone", 9, 15, "user:ada", 9)], meta: { appliedSeqno: 3, frontierTs: 15 } }));
    expect(store.receiptFloor("phone", "user:ada")).toBe(9);
    expect(await fresh("phone", "user:ada")).toBe(9);
    expect(store.receiptFloor("phone", "user:ada")).toBe(9);
    // A receipt of a null owner and one of the owner "" are two clients' floors, never one.
    store.apply(
      batch({
        receipts: [
          { clientId: "phone", seq: 20, ts: 16, result: "1", route: null, owner: "", floorSeq: 20 },
          { clientId: "tablet", seq: 5, ts: 16, result: "1", route: null },
        ],
        meta: { appliedSeqno: 4, frontierTs: 16 },
      }),
    );
    expect(store.receiptFloor("phone", "")).toBe(20);
    expect(store.receiptFloor("phone", null)).toBe(0);
    // Pruning receipts that held floors lowers them: the store reads them again.
    await store.pruneHistory(17, 17, 17);
    const afterPrune = await fresh("phone", "user:ada");
    expect(store.receiptFloor("phone", "user:ada")).toBe(afterPrune);
    expect(store.receiptFloor("phone", "")).toBe(await fresh("phone", ""));
    // A reset (a restore of nothing) forgets them all.
    await store.reset();
    expect(store.receiptFloor("phone", "user:ada")).toBe(0);
    expect(store.receiptFloor("phone", "")).toBe(0);
  });
});
