/**
 * Scenario: the local stores of one node share one overlay budget. A store waits for
 * room when the node is full even if it holds nothing itself, and then every store of
 * the node folds, its own thresholds notwithstanding; a store that closes or fails no
 * longer holds the others' room. Hostile load: several stores applying random batches
 * at once against a tiny budget all finish (no store waits forever for another), and the
 * node never holds more than the budget plus the one batch each store checked room for.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { type LocalStore, OverlayBudget } from "../../src/local/index.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { DEPLOYMENT, batch, entry, ids, key, localFixtures, revision, thrown } from "./localFixtures.js";

const { dirs, stores } = localFixtures();
/** Folds only when the budget asks (or `flush`). */
const NEVER_BY_ITSELF = { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 };

/** One document and one index entry per id: two rows each. */
function applyDocuments(store: LocalStore, documentIds: readonly DocumentId[], seqno: number): void {
  const ts = 10 + seqno;
  store.apply(
    batch({
      revisions: documentIds.map((id) => revision(id, ts, `{"seqno":${seqno}}`)),
      indexUpdates: documentIds.map((id, n) => entry(1, key(seqno, n), ts, id)),
      meta: { appliedSeqno: seqno, frontierTs: ts },
    }),
  );
}

describe("one overlay budget per node", () => {
  it("makes a store with nothing unfolded wait while the others fill the node, and folds them to make room", async () => {
    const budget = new OverlayBudget({ rowsMax: 100 });
    const full = stores.open(dirs.file(), 0, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    const empty = stores.open(dirs.file(), 1, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    // 39 rows stay under the share at which every store folds; the next 62 pass the budget.
    applyDocuments(full, ids(19, 1, 1), 0);
    expect(full.unfoldedRows).toBe(38);
    expect(empty.hasRoom).toBe(true);
    applyDocuments(full, ids(31, 1, 2), 1);
    expect(full.unfoldedRows).toBe(100);
    expect(budget.rows).toBe(100);
    expect(empty.unfoldedRows).toBe(0);
    expect(empty.hasRoom).toBe(false);
    expect(empty.hasRoomFor(0, 0)).toBe(false);
    // The wait folds the store that holds the rows, whose own thresholds never would.
    await empty.room();
    expect(full.unfoldedRows).toBe(0);
    expect(full.durableMeta().appliedSeqno).toBe(1);
    expect(empty.hasRoom).toBe(true);
  });

  it("folds every store once the node passes 40% of the budget, whatever each store's own thresholds", async () => {
    const budget = new OverlayBudget({ rowsMax: 100 });
    const a = stores.open(dirs.file(), 0, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    const b = stores.open(dirs.file(), 1, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    applyDocuments(b, ids(5, 1, 3), 0);
    applyDocuments(a, ids(14, 1, 4), 0);
    // 38 rows: under 40, nothing folds.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([a.durableMeta().appliedSeqno, b.durableMeta().appliedSeqno]).toEqual([-1, -1]);
    // One more document in `a` makes 40: both fold, `b` though it applied nothing since.
    applyDocuments(a, ids(1, 1, 5), 1);
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([a.flush(), b.flush()]);
    expect([a.durableMeta().appliedSeqno, b.durableMeta().appliedSeqno]).toEqual([1, 0]);
    expect(budget.rows).toBe(0);
  });

  it("frees a closed store's rows and a failed store's rows for the others", async () => {
    const budget = new OverlayBudget({ rowsMax: 50 });
    const closing = stores.open(dirs.file(), 0, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    const other = stores.open(dirs.file(), 1, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    applyDocuments(closing, ids(25, 1, 7), 0);
    expect(other.hasRoom).toBe(false);
    closing.close();
    expect(budget.rows).toBe(0);
    expect(other.hasRoom).toBe(true);

    const failingPath = dirs.file();
    const failing = stores.open(failingPath, 2, DEPLOYMENT, NEVER_BY_ITSELF, budget);
    applyDocuments(failing, ids(1, 1, 8), 0);
    await failing.flush();
    const raw = new Database(failingPath);
    raw.exec("DROP TABLE index_entries");
    raw.close();
    applyDocuments(failing, ids(25, 1, 10), 1);
    expect(other.hasRoom).toBe(false);
    // A waiter on the node's room is woken by the failure, not left waiting for rows that will never fold.
    const waiting = other.room();
    await expect(failing.flush()).rejects.toMatchObject({ code: "LOCAL_FOLD_FAILED" });
    await waiting;
    expect(budget.rows).toBe(0);
    expect(other.hasRoom).toBe(true);
  });

  it("lets several stores apply at once on a tiny budget: all finish, all fold, the node stays within the budget plus one batch each", async () => {
    const random = new SeededRandom(27);
    const budget = new OverlayBudget({ rowsMax: 60 });
    const count = 4;
    const members = Array.from({ length: count }, (_, shard) => stores.open(dirs.file(), shard, DEPLOYMENT, { minRows: Number.MAX_SAFE_INTEGER, delayMs: 5 }, budget));
    const batchRowsMax = 2 * 8;
    let mostHeld = 0;
    await Promise.all(
      members.map(async (store, shard) => {
        for (let seqno = 0; seqno < 40; seqno++) {
          await store.room();
          applyDocuments(store, ids(1 + randomInt(random, 8), 1, 1_000 * shard + seqno), seqno);
          mostHeld = Math.max(mostHeld, budget.rows);
          if (randomInt(random, 3) === 0) await new Promise((resolve) => setImmediate(resolve));
        }
        await store.flush();
      }),
    );
    expect(mostHeld).toBeGreaterThan(budget.rowsMax / 2);
    expect(mostHeld).toBeLessThan(budget.rowsMax + count * batchRowsMax);
    for (const store of members) {
      expect(store.durableMeta().appliedSeqno).toBe(39);
      expect(store.unfoldedRows).toBe(0);
    }
  });

  it("refuses a budget of no rows and a store given both its own bound and a shared budget", () => {
    expect(thrown(() => new OverlayBudget({ rowsMax: 0 })).code).toBe("INVALID_ARGUMENT");
    expect(thrown(() => new OverlayBudget({ bytesMax: 1.5 })).code).toBe("INVALID_ARGUMENT");
    expect(thrown(() => stores.open(dirs.file(), 0, DEPLOYMENT, { overlayRowsMax: 10 }, new OverlayBudget())).code).toBe("INVALID_ARGUMENT");
  });
});
