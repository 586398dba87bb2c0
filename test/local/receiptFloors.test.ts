/**
 * Scenario: receipts with owners and client floors in a shard's local store. A receipt
 * carrying the client's floor (its ackedThrough + 1) makes the floor readable at once
 * (from the overlay), and once folded the client's receipts below it are gone, while
 * another owner's receipts of the same clientId and other clients' receipts stay. The
 * owner and the floor survive a reopen, a dump and restore, and a snapshot written to a
 * bucket and restored into another store. A store that remembers clients' floors and
 * highest receipt seqs answers every lookup as one that asks SQLite each time would,
 * whatever order receipts, lookups, folds, prunes and resets come in.
 */
import { describe, expect, it } from "vitest";
import { randomInt, SeededRandom } from "../../src/base/random.js";
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

  it("answers every receipt lookup as the model of applied receipts says, with lookups, folds, prunes and resets in any order", async () => {
    const clients = ["a", "b", "c", "d"];
    // What a restore brings: higher seqs than any applied below, for every client.
    const donor = stores.open(dirs.file());
    donor.apply(batch({ receipts: clients.map((clientId) => ({ clientId, seq: 45, ts: 5, result: "1", route: null })), meta: { appliedSeqno: 0, frontierTs: 5 } }));
    await donor.flush();
    const cursor = await donor.openDumpCursor();
    const donated = [];
    for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) donated.push(chunk);
    cursor.close();
    for (let seed = 1; seed <= 8; seed++) {
      const random = new SeededRandom(seed);
      const store = stores.open(dirs.file());
      /** `${client}/${seq}` → ts of the receipt the store holds. */
      const model = new Map<string, number>();
      let seqno = 0;
      let ts = 10;
      for (let step = 0; step < 120; step++) {
        const roll = randomInt(random, 20);
        if (roll < 10) {
          // Seqs out of order on purpose: a lower seq than the client's highest is held too.
          const receipts = Array.from({ length: 1 + randomInt(random, 3) }, () => {
            const clientId = clients[randomInt(random, clients.length)]!;
            return { clientId, seq: randomInt(random, 40), ts, result: "1", route: null };
          });
          store.apply(batch({ receipts, meta: { appliedSeqno: seqno++, frontierTs: ts } }));
          for (const receipt of receipts) model.set(`${receipt.clientId}/${receipt.seq}`, ts);
          ts++;
        } else if (roll < 16) {
          // A lookup remembers the client's highest seq as it stands now.
          const clientId = clients[randomInt(random, clients.length)]!;
          const seq = randomInt(random, 47);
          expect(store.receipt(clientId, seq)?.ts ?? null).toBe(model.get(`${clientId}/${seq}`) ?? null);
        } else if (roll < 18) {
          await store.flush();
        } else if (roll < 19) {
          const belowTs = ts - randomInt(random, 5);
          await store.pruneHistory(belowTs);
          for (const [key, at] of model) if (at < belowTs) model.delete(key);
        } else if (randomInt(random, 2) === 0) {
          await store.reset();
          model.clear();
          seqno = 0;
        } else {
          await store.restore(
            (async function* () {
              yield* donated;
            })(),
            { appliedSeqno: 0, epoch: 1, lastHash: null, frontierTs: 5 },
          );
          model.clear();
          for (const clientId of clients) model.set(`${clientId}/45`, 5);
          seqno = 1;
          ts = 10;
        }
      }
      for (const clientId of clients) {
        for (let seq = 0; seq < 47; seq++) expect(store.receipt(clientId, seq)?.ts ?? null, `seed ${seed}: ${clientId}/${seq}`).toBe(model.get(`${clientId}/${seq}`) ?? null);
      }
      store.close();
    }
  });
});
