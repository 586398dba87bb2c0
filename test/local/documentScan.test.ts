/**
 * Scenario: scanning a table's documents in id order at a read ts (what `by_id` is served
 * from), checked against a model of every revision applied. Random inserts, updates and
 * deletes over two tables are applied in batches, some folded into the file and some
 * still in the overlay (in both generations), and every scan — at old and new ts, over
 * random id ranges, both orders, limits that force the file side to page — must return
 * exactly the model's live documents of that table.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { OpenStores, TempDirs, batch, ids, revision, thrown } from "./localFixtures.js";

const dirs = new TempDirs();
const stores = new OpenStores();
afterEach(() => {
  stores.closeAll();
  dirs.cleanup();
});

interface ModelRevision {
  readonly ts: number;
  readonly value: string | null;
}

function expected(model: Map<DocumentId, ModelRevision[]>, table: Set<DocumentId>, ts: number, start: string, end: string | null, order: "asc" | "desc", limit: number) {
  const live: { id: string; value: string; docTs: number }[] = [];
  for (const [id, revisions] of model) {
    if (!table.has(id) || id < start || (end !== null && id >= end)) continue;
    const newest = revisions.filter((candidate) => candidate.ts <= ts).at(-1);
    if (newest !== undefined && newest.value !== null) live.push({ id, value: newest.value, docTs: newest.ts });
  }
  live.sort((left, right) => (left.id < right.id ? -1 : left.id > right.id ? 1 : 0));
  if (order === "desc") live.reverse();
  return live.slice(0, limit);
}

describe("documentScan", () => {
  it("returns the live documents of one table in id order at any ts, over file and overlay", async () => {
    const store = stores.open(dirs.file(), 0, undefined, { minRows: 1_000_000, delayMs: 1_000_000 });
    const random = new SeededRandom(42);
    const tableOne = ids(60, 1, 3);
    const tableTwo = ids(60, 2, 4);
    const inTableOne = new Set(tableOne);
    const model = new Map<DocumentId, ModelRevision[]>();
    let ts = 0;
    let folding: Promise<void> | null = null;
    for (let round = 0; round < 12; round++) {
      const revisions = [];
      const touched = new Set<DocumentId>();
      ts += 10;
      for (let k = 0; k < 20; k++) {
        const pool = random.float() < 0.5 ? tableOne : tableTwo;
        const id = pool[Math.floor(random.float() * pool.length)]!;
        if (touched.has(id)) continue;
        touched.add(id);
        const history = model.get(id) ?? [];
        const previous = history.at(-1);
        const value = previous !== undefined && previous.value !== null && random.float() < 0.3 ? null : `{"round":${round},"k":${k}}`;
        if (previous === undefined && value === null) continue;
        revisions.push(revision(id, ts, value, previous?.ts ?? null, pool === tableOne ? 1 : 2));
        history.push({ ts, value });
        model.set(id, history);
      }
      store.apply(batch({ revisions, meta: { appliedSeqno: round, frontierTs: ts } }));
      // Fold some rounds: the file, the frozen generation and the active one all hold rows at times.
      if (round % 4 === 1) folding = store.flush();
      if (round % 4 === 3) await folding;
      for (let check = 0; check < 25; check++) {
        const at = 10 * (1 + Math.floor(random.float() * (round + 1)));
        const order = random.float() < 0.5 ? "asc" : "desc";
        const limit = 1 + Math.floor(random.float() * 40);
        const bounds = [tableOne[Math.floor(random.float() * 60)]!, tableOne[Math.floor(random.float() * 60)]!].sort();
        const [start, end] = random.float() < 0.3 ? ["", null] : [bounds[0]!, bounds[1]!];
        const scanned = store.documentScan(1, { start, end }, at, order, limit);
        expect(scanned).toEqual(expected(model, inTableOne, at, start, end, order, limit));
      }
    }
  });

  it("refuses bad arguments with typed errors", () => {
    const store = stores.open(dirs.file());
    expect(thrown(() => store.documentScan(-1, { start: "", end: null }, 0, "asc", 1)).code).toBe("INVALID_ARGUMENT");
    expect(thrown(() => store.documentScan(1, { start: 5 as never, end: null }, 0, "asc", 1)).code).toBe("INVALID_ARGUMENT");
    expect(thrown(() => store.documentScan(1, { start: "", end: null }, 0, "up" as never, 1)).code).toBe("INVALID_ARGUMENT");
    expect(store.documentScan(1, { start: "b", end: "a" }, 0, "asc", 10)).toEqual([]);
  });
});
