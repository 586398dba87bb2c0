/**
 * Scenario: pinned pages (`paginate` with `endCursor`), what usePaginatedQuery builds on.
 * A client loads pages of a range, then pins each loaded page at its continueCursor and
 * keeps only the last one open-ended. Rows are inserted and deleted everywhere between
 * reads: in the middle of a page, right at page boundaries, before the first row and
 * after the last. Every time, the pinned pages read back-to-back must hold every row of
 * the range up to the last page's end exactly once and in order, in both orders. Then an
 * attacker's cursors: another index's, another order's, garbage, an endCursor before the
 * cursor, one from another range of the same index. Each is a typed error, or a page
 * that stays inside the query's range. Then pinned pages that grow: past 2 × numItems
 * one comes back with a splitCursor at its middle, and its two halves together are the
 * page; past the page limit it returns its first rows marked partial, and splitting
 * until no page asks for it yields every row once, in order; hostile split cursors are
 * refused like any other cursor.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { QUERY_PAGE_ITEMS_MAX, QUERY_PAGE_SPLIT_ROWS_MAX } from "../../src/base/limits.js";
import { SeededRandom } from "../../src/base/random.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { rangesOverlap } from "../../src/model/KeyRange.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { runtimeOn } from "../support/functionsHarness.js";
import { harnessPerTest } from "../support/shardHarness.js";
import * as paginationApp from "./paginationApp.js";
import { rejection } from "../support/rejection.js";

type Page = {
  readonly page: { readonly n: number; readonly tag: string }[];
  readonly isDone: boolean;
  readonly continueCursor: string;
  readonly splitCursor?: string;
  readonly pageStatus?: "SplitRecommended" | "SplitRequired";
};

interface PageOptions {
  readonly cursor: string | null;
  readonly numItems: number;
  readonly endCursor?: string | null;
}

type Order = "asc" | "desc";


describe("pinned pages (paginate with endCursor)", () => {
  const harness = harnessPerTest(memoryBucket);

  async function setup(): Promise<FunctionRuntime> {
    const h = await harness();
    return runtimeOn(h, await h.writer("a"), paginationApp);
  }

  const pageOf = async (runtime: FunctionRuntime, paginationOpts: PageOptions, order: Order = "asc") =>
    (await runtime.runQuery("items:page", { paginationOpts, order })).value as Page;
  const all = async (runtime: FunctionRuntime, order: Order = "asc") => (await runtime.runQuery("items:all", { order })).value as number[];
  const insert = (runtime: FunctionRuntime, ns: number[], tag?: string) => runtime.runMutation("items:insert", { ns, tag });

  /**
   * Pages as usePaginatedQuery holds them: every page but the last pinned at the cursor
   * its successor starts from. Returns their rows read back-to-back, and the last page.
   */
  async function readPages(runtime: FunctionRuntime, cursors: readonly (string | null)[], numItems: number, order: Order) {
    const rows: number[] = [];
    for (let k = 0; k < cursors.length - 1; k++) {
      const pinned = await pageOf(runtime, { cursor: cursors[k]!, numItems, endCursor: cursors[k + 1]! }, order);
      expect(pinned.continueCursor).toBe(cursors[k + 1]);
      expect(pinned.isDone).toBe(false);
      rows.push(...pinned.page.map((item) => item.n));
    }
    const last = await pageOf(runtime, { cursor: cursors[cursors.length - 1]!, numItems }, order);
    rows.push(...last.page.map((item) => item.n));
    return { rows, last };
  }

  for (const order of ["asc", "desc"] as const) {
    it(`keeps loaded pages gapless and duplicate-free under inserts and deletes anywhere (${order})`, async () => {
      const runtime = await setup();
      await insert(runtime, Array.from({ length: 60 }, (_, i) => i * 10));
      const random = new SeededRandom(order === "asc" ? 11 : 12);
      const numItems = 7;
      const cursors: (string | null)[] = [null];
      for (let round = 0; round < 12; round++) {
        const { rows, last } = await readPages(runtime, cursors, numItems, order);
        // The loaded pages are exactly the range's prefix up to the last page's end, in order.
        const everything = await all(runtime, order);
        expect(rows).toEqual(everything.slice(0, rows.length));
        if (!last.isDone) expect(rows.length).toBeLessThan(everything.length);
        else expect(rows).toEqual(everything);
        // Load one more page (the last one becomes pinned at its continueCursor), then write everywhere.
        if (!last.isDone) cursors.push(last.continueCursor);
        const boundaries = rows.filter((_, i) => i > 0 && i % numItems === 0);
        const inserted = [
          random.float() * 600, // anywhere
          (boundaries[0] ?? 0) + (order === "asc" ? -0.5 : 0.5), // right before a page boundary
          (boundaries[boundaries.length - 1] ?? 0) + (order === "asc" ? 0.25 : -0.25), // right after one
          order === "asc" ? -round - 1 : 1000 + round, // before the first row
          order === "asc" ? 1000 + round : -round - 1, // after the last
        ];
        await insert(runtime, inserted);
        const doomed = [everything[Math.floor(random.float() * everything.length)]!, rows[rows.length - 1]!];
        await runtime.runMutation("items:removeByN", { ns: doomed });
      }
      expect(cursors.length).toBeGreaterThan(5);
    });
  }

  it("a pinned page ends exactly at its endCursor: a write past it is not in its read set, one at its last row is", async () => {
    const runtime = await setup();
    await insert(runtime, [10, 20, 30, 40, 50]);
    const first = await pageOf(runtime, { cursor: null, numItems: 2 });
    expect(first.page.map((item) => item.n)).toEqual([10, 20]);
    await insert(runtime, [15, 5]);
    const pinned = await runtime.runQuery("items:page", { paginationOpts: { cursor: null, numItems: 2, endCursor: first.continueCursor } });
    expect((pinned.value as Page).page.map((item) => item.n)).toEqual([5, 10, 15, 20]);
    const pastIt = await insert(runtime, [20.5]);
    expect(pinned.readRanges.some((read) => pastIt.writeRanges.some((write) => rangesOverlap(read, write)))).toBe(false);
    const insideIt = await insert(runtime, [19.5]);
    expect(pinned.readRanges.some((read) => insideIt.writeRanges.some((write) => rangesOverlap(read, write)))).toBe(true);
  });

  it("an endCursor at the end of the range pins a page through to the end, done", async () => {
    const runtime = await setup();
    await insert(runtime, [1, 2, 3]);
    const whole = await pageOf(runtime, { cursor: null, numItems: 10 });
    expect(whole.isDone).toBe(true);
    await insert(runtime, [4, 0]);
    const pinned = await pageOf(runtime, { cursor: null, numItems: 1, endCursor: whole.continueCursor });
    expect(pinned).toMatchObject({ isDone: true, continueCursor: whole.continueCursor });
    expect(pinned.page.map((item) => item.n)).toEqual([0, 1, 2, 3, 4]);
    // A done cursor pinned to itself is an empty, done page.
    expect(await pageOf(runtime, { cursor: whole.continueCursor, numItems: 1, endCursor: whole.continueCursor })).toMatchObject({ page: [], isDone: true });
    // endCursor null is no endCursor.
    expect((await pageOf(runtime, { cursor: null, numItems: 2, endCursor: null })).page.map((item) => item.n)).toEqual([0, 1]);
  });

  it("refuses another index's cursor, another order's, garbage, and an endCursor before the cursor", async () => {
    const runtime = await setup();
    await insert(runtime, [1, 2, 3, 4, 5, 6]);
    const asc = await pageOf(runtime, { cursor: null, numItems: 2 });
    const ascLater = await pageOf(runtime, { cursor: asc.continueCursor, numItems: 2 });
    const desc = await pageOf(runtime, { cursor: null, numItems: 2 }, "desc");
    const ofTag = (await runtime.runQuery("items:pageOfTag", { tag: "a", paginationOpts: { cursor: null, numItems: 2 } })).value as Page;
    const forged = Buffer.from(JSON.stringify({ v: 1, i: 999, o: "asc", k: "AAAA" })).toString("base64url");
    const notJson = Buffer.from("{not json").toString("base64url");
    const hostile: [string, unknown, RegExp][] = [
      ["another index's cursor", ofTag.continueCursor, /another query/],
      ["another order's cursor", desc.continueCursor, /another query/],
      ["a cursor of an index that does not exist", forged, /another query/],
      ["an empty string", "", /not a pagination cursor/],
      ["characters outside base64url", "a+b/c=", /not a pagination cursor/],
      ["base64 of something that is not JSON", notJson, /not a pagination cursor/],
      ["a huge cursor", "A".repeat(9000), /not a pagination cursor/],
      ["a cursor before the cursor", asc.continueCursor, /endCursor lies before cursor/],
    ];
    for (const [what, endCursor, message] of hostile) {
      const cursor = what === "a cursor before the cursor" ? ascLater.continueCursor : null;
      const error = await rejection(pageOf(runtime, { cursor, numItems: 2, endCursor: endCursor as string }));
      expect(hasErrorCode(error, "INVALID_ARGUMENT"), what).toBe(true);
      expect(error.message, what).toMatch(message);
    }
    // Not a string at all, or an unknown option: the argument validator refuses it before paginate runs.
    for (const paginationOpts of [{ cursor: null, numItems: 2, endCursor: 7 }, { cursor: null, numItems: 2, endCursr: asc.continueCursor }]) {
      const error = await rejection(runtime.runQuery("items:page", { paginationOpts }));
      expect(hasErrorCode(error, "INVALID_ARGUMENT")).toBe(true);
      expect(error.message).toMatch(/args\.paginationOpts/);
    }
    // numItems is still checked on a pinned page.
    expect(hasErrorCode(await rejection(pageOf(runtime, { cursor: null, numItems: 0, endCursor: asc.continueCursor })), "INVALID_ARGUMENT")).toBe(true);
    // The cursor itself pinned to itself: an empty page.
    expect(await pageOf(runtime, { cursor: asc.continueCursor, numItems: 2, endCursor: asc.continueCursor })).toMatchObject({ page: [], isDone: false, continueCursor: asc.continueCursor });
  });

  it("an endCursor from another range of the same index reads only the query's own range", async () => {
    const runtime = await setup();
    await insert(runtime, [1, 2, 3], "a");
    await insert(runtime, [1, 2, 3], "b");
    await insert(runtime, [1, 2, 3], "c");
    const pageOfTag = async (tag: string, paginationOpts: PageOptions) => (await runtime.runQuery("items:pageOfTag", { tag, paginationOpts })).value as Page;
    const ofC = await pageOfTag("c", { cursor: null, numItems: 2 });
    // Pinned from the start of "a" to a position inside "c": only "a" rows, however far the endCursor reaches.
    const stretched = await pageOfTag("a", { cursor: null, numItems: 1, endCursor: ofC.continueCursor });
    expect(stretched.page.map((item) => `${item.tag}${item.n}`)).toEqual(["a1", "a2", "a3"]);
    // An endCursor before "b"'s range: nothing of "b" (not every row up to there).
    const ofA = await pageOfTag("a", { cursor: null, numItems: 1 });
    expect((await pageOfTag("b", { cursor: null, numItems: 1, endCursor: ofA.continueCursor })).page).toEqual([]);
  });

  /** Splits pinned pages the way usePaginatedQuery does until none asks for it; returns the pages' results. */
  async function splitUntilSettled(runtime: FunctionRuntime, first: PageOptions, order: Order = "asc") {
    const pending: PageOptions[] = [first];
    const settled: { options: PageOptions; result: Page }[] = [];
    for (let rounds = 0; pending.length > 0; rounds++) {
      expect(rounds).toBeLessThan(64);
      const options = pending.shift()!;
      const result = await pageOf(runtime, options, order);
      expect(result.continueCursor).toBe(options.endCursor);
      if (result.splitCursor === undefined) {
        settled.push({ options, result });
        continue;
      }
      // The halves go back at the front, in order: the pages stay in the range's order.
      pending.unshift({ ...options, endCursor: result.splitCursor }, { ...options, cursor: result.splitCursor });
    }
    return settled;
  }

  for (const order of ["asc", "desc"] as const) {
    it(`a pinned page grown past 2 × numItems returns a splitCursor at its middle, and its halves together are the page (${order})`, async () => {
      const runtime = await setup();
      const up = order === "asc" ? 1 : -1;
      await insert(runtime, Array.from({ length: 12 }, (_, i) => 100 + up * i * 10));
      const first = await pageOf(runtime, { cursor: null, numItems: 4 }, order);
      const second = await pageOf(runtime, { cursor: first.continueCursor, numItems: 4 }, order);
      const pinned: PageOptions = { cursor: first.continueCursor, numItems: 4, endCursor: second.continueCursor };
      // Exactly 2 × numItems rows: no split, and no split fields at all.
      await insert(runtime, [45, 55, 65, 68].map((k) => 100 + up * k));
      const atRule = await pageOf(runtime, pinned, order);
      expect(atRule.page).toHaveLength(8);
      expect("splitCursor" in atRule || "pageStatus" in atRule).toBe(false);

      await insert(runtime, [100 + up * 46]);
      const grown = await pageOf(runtime, pinned, order);
      expect(grown.page.map((item) => item.n)).toEqual([40, 45, 46, 50, 55, 60, 65, 68, 70].map((k) => 100 + up * k));
      expect(grown).toMatchObject({ isDone: false, continueCursor: second.continueCursor, pageStatus: "SplitRecommended" });
      const firstHalf = await pageOf(runtime, { ...pinned, endCursor: grown.splitCursor! }, order);
      const secondHalf = await pageOf(runtime, { ...pinned, cursor: grown.splitCursor! }, order);
      // The cursor after the middle row: 4 rows, then 5.
      expect(firstHalf.page.map((item) => item.n)).toEqual(grown.page.slice(0, 4).map((item) => item.n));
      expect(secondHalf.page.map((item) => item.n)).toEqual(grown.page.slice(4).map((item) => item.n));
      expect(firstHalf).toMatchObject({ continueCursor: grown.splitCursor, isDone: false });
      expect(secondHalf).toMatchObject({ continueCursor: second.continueCursor, isDone: false });
      expect(firstHalf.splitCursor ?? secondHalf.splitCursor).toBeUndefined();

      // numItems 1: a page of 3 rows splits into 1 and 2, never into an empty half.
      const tiny = await splitUntilSettled(runtime, { cursor: null, numItems: 1, endCursor: second.continueCursor }, order);
      expect(tiny.flatMap(({ result }) => result.page.map((item) => item.n))).toEqual((await all(runtime, order)).slice(0, 13));
      for (const { result } of tiny) expect(result.page.length).toBeGreaterThanOrEqual(1);
      for (const { result } of tiny) expect(result.page.length).toBeLessThanOrEqual(2);
    });
  }

  it(`a pinned page whose range holds more than ${QUERY_PAGE_ITEMS_MAX} rows returns its first ${QUERY_PAGE_ITEMS_MAX}, partial, and splits its way out`, async () => {
    const runtime = await setup();
    const half = QUERY_PAGE_ITEMS_MAX / 2;
    await insert(runtime, Array.from({ length: half }, (_, i) => i));
    await insert(runtime, Array.from({ length: half }, (_, i) => half + i));
    const full = await pageOf(runtime, { cursor: null, numItems: QUERY_PAGE_ITEMS_MAX });
    expect(full.page).toHaveLength(QUERY_PAGE_ITEMS_MAX);
    const pinned: PageOptions = { cursor: null, numItems: QUERY_PAGE_ITEMS_MAX, endCursor: full.continueCursor };
    // Complete, but past QUERY_PAGE_SPLIT_ROWS_MAX: a split is recommended before the page outgrows one read.
    const whole = await pageOf(runtime, pinned);
    expect(whole).toMatchObject({ pageStatus: "SplitRecommended", isDone: false });
    expect(whole.page).toHaveLength(QUERY_PAGE_ITEMS_MAX);
    expect(QUERY_PAGE_SPLIT_ROWS_MAX).toBeLessThan(QUERY_PAGE_ITEMS_MAX);

    await insert(runtime, Array.from({ length: 1000 }, (_, i) => i + 0.5));
    const partial = await pageOf(runtime, pinned);
    expect(partial).toMatchObject({ pageStatus: "SplitRequired", isDone: false, continueCursor: full.continueCursor });
    expect(partial.page).toHaveLength(QUERY_PAGE_ITEMS_MAX);
    const everything = await all(runtime);
    expect(partial.page.map((item) => item.n)).toEqual(everything.slice(0, QUERY_PAGE_ITEMS_MAX));

    const settled = await splitUntilSettled(runtime, pinned);
    expect(settled.flatMap(({ result }) => result.page.map((item) => item.n))).toEqual(everything);
    for (const { result } of settled) expect(result.page.length).toBeLessThanOrEqual(QUERY_PAGE_SPLIT_ROWS_MAX);
    expect(settled.length).toBeGreaterThanOrEqual(3);
  });

  it("a query whose returns is paginationResultValidator answers a page that asks to be split", async () => {
    const runtime = await setup();
    await insert(runtime, [1, 2, 3]);
    const open = (await runtime.runQuery("items:pageReturned", { paginationOpts: { cursor: null, numItems: 1 } })).value as Page;
    await insert(runtime, [0.1, 0.2, 0.3]);
    const grown = (await runtime.runQuery("items:pageReturned", { paginationOpts: { cursor: null, numItems: 1, endCursor: open.continueCursor } })).value as Page;
    expect(grown).toMatchObject({ pageStatus: "SplitRecommended", splitCursor: expect.any(String) });
    expect(grown.page.map((item) => item.n)).toEqual([0.1, 0.2, 0.3, 1]);
  });

  it("refuses split cursors of another index or order, tampered ones, and halves turned around", async () => {
    const runtime = await setup();
    await insert(runtime, Array.from({ length: 10 }, (_, i) => i));
    await insert(runtime, Array.from({ length: 10 }, (_, i) => i), "b");
    const splitOf = async (query: string, args: Record<string, unknown>) => {
      const open = (await runtime.runQuery(query, { ...args, paginationOpts: { cursor: null, numItems: 3 } })).value as Page;
      // Nine rows between the open page's first and last (it held 3): more than 2 × 3.
      const [low, high] = [open.page[0]!.n, open.page[open.page.length - 1]!.n];
      await insert(runtime, Array.from({ length: 9 }, (_, i) => low + ((high - low) * (i + 1)) / 10), "b");
      const grown = (await runtime.runQuery(query, { ...args, paginationOpts: { cursor: null, numItems: 3, endCursor: open.continueCursor } })).value as Page;
      expect(grown.splitCursor, `${query} ${JSON.stringify(args)}`).toBeTypeOf("string");
      return { splitCursor: grown.splitCursor!, endCursor: open.continueCursor };
    };
    const asc = await splitOf("items:page", {});
    const desc = await splitOf("items:page", { order: "desc" });
    const ofTag = await splitOf("items:pageOfTag", { tag: "b" });
    const body = JSON.parse(Buffer.from(asc.splitCursor, "base64url").toString("utf8")) as Record<string, unknown>;
    const reencoded = (changes: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...body, ...changes })).toString("base64url");
    const hostile: [string, PageOptions, RegExp][] = [
      ["another order's split cursor as cursor", { cursor: desc.splitCursor, numItems: 3, endCursor: asc.endCursor }, /another query/],
      ["another order's split cursor as endCursor", { cursor: null, numItems: 3, endCursor: desc.splitCursor }, /another query/],
      ["another index's split cursor", { cursor: ofTag.splitCursor, numItems: 3, endCursor: asc.endCursor }, /another query/],
      ["a split cursor of another version", { cursor: reencoded({ v: 2 }), numItems: 3, endCursor: asc.endCursor }, /not a pagination cursor/],
      ["a split cursor with a key that is not a string", { cursor: reencoded({ k: 7 }), numItems: 3, endCursor: asc.endCursor }, /not a pagination cursor/],
      ["a split cursor cut short", { cursor: asc.splitCursor.slice(0, -3) + "!", numItems: 3, endCursor: asc.endCursor }, /not a pagination cursor/],
      ["the halves turned around", { cursor: asc.splitCursor, numItems: 3, endCursor: (await pageOf(runtime, { cursor: null, numItems: 1 })).continueCursor }, /endCursor lies before cursor/],
    ];
    for (const [what, paginationOpts, message] of hostile) {
      const error = await rejection(pageOf(runtime, paginationOpts));
      expect(hasErrorCode(error, "INVALID_ARGUMENT"), what).toBe(true);
      expect(error.message, what).toMatch(message);
    }
    // A forged split cursor of the right shape is only a position: the page stays in the query's range, in order.
    const forged = reencoded({ k: Buffer.from([0xff, 0xff, 0xff]).toString("base64url") });
    const beyond = await pageOf(runtime, { cursor: null, numItems: 3, endCursor: forged });
    expect(beyond.page.map((item) => item.n)).toEqual(await all(runtime));
  });
});
