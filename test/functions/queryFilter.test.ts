/**
 * Scenario: `.filter(q => …)` on queries (FilterBuilder, QueryChain.scan). A filter narrows
 * what a query returns, not what it reads, so three things must hold at once:
 *
 * - Results: against a model of the table, random filters (random expression trees over
 *   present, nested and missing fields, chained as several `.filter` calls) read in both
 *   orders give exactly the model's filtered, ordered rows — through `paginate` (pages
 *   concatenated hold each row once, every page but the last holds exactly numItems, and
 *   pinning the pages at their cursors reads them back unchanged), `take`, `first`,
 *   `unique` and `collect`; two chained filters are their AND.
 * - Read sets: a filtered read records exactly the batches it scanned, no more (a write
 *   past the last row it examined, even one that makes a row match, does not re-run it —
 *   a subscription over a big table would otherwise re-run on every write) and no less (a
 *   write to any examined row, matching or not, does — else a row that starts to match
 *   would be missed). The boundary is checked to the row: the last row of the last batch
 *   overlaps, the next one does not.
 * - Bounded pages: a filter that matches little over more than QUERY_FILTER_SCAN_ROWS_MAX
 *   rows gives a short (even empty) page with isDone false and a cursor after the last row
 *   read, so one page cannot read the whole table; following the cursors still reaches
 *   every matching row once and then isDone.
 *
 * Then the semantics of values: a missing field is undefined, equal only to undefined and
 * below every value (so `lt(owner.city, "")` is exactly the tasks without an owner);
 * comparisons across kinds follow compareValues. Last, malformed filters (not a function,
 * one that returns no q expression — a forgotten `return` — bad field paths, operands that
 * are not values) fail the query run with INVALID_ARGUMENT.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { QUERY_FILTER_SCAN_ROWS_MAX } from "../../src/base/limits.js";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { compareValues } from "../../src/model/compareValues.js";
import { rangesOverlap, type KeyRange } from "../../src/model/KeyRange.js";
import type { Value } from "../../src/model/Value.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { runtimeOn } from "../support/functionsHarness.js";
import { harnessPerTest } from "../support/shardHarness.js";
import * as filterApp from "./filterApp.js";
import type { FilterSpec } from "./filterApp.js";
import { rejection } from "../support/rejection.js";

interface Task {
  readonly n: number;
  readonly status: string;
  readonly priority: number;
  readonly owner?: { readonly city: string };
}

type Doc = Task & { readonly _id: string; readonly _creationTime: number };

interface Page {
  readonly page: Doc[];
  readonly isDone: boolean;
  readonly continueCursor: string;
}

type Order = "asc" | "desc";

const STATUSES = ["open", "closed", "blocked", "done"] as const;
const CITIES = ["bergen", "oslo", "tromsø"] as const;

/** A document as the model holds it: without system fields. */
const fieldsOf = ({ _id: _, _creationTime: __, ...task }: Doc): Task => task;
const ns = (docs: readonly Doc[]) => docs.map((doc) => doc.n);


// ---- the model: an evaluator of FilterSpec written apart from FilterBuilder --------------

type Scalar = string | number | boolean | null | undefined | { readonly city: string };

function fieldOfTask(task: Task, path: string): Scalar {
  let value: unknown = task;
  for (const part of path.split(".")) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value as Scalar;
}

/** Kinds in the index-key order, with undefined (missing) first. */
function rankOf(value: Scalar): number {
  if (value === undefined) return 0;
  if (value === null) return 1;
  if (typeof value === "boolean") return 2;
  if (typeof value === "number") return 3;
  if (typeof value === "string") return 5;
  return 8;
}

function modelCompare(left: Scalar, right: Scalar): number {
  const [a, b] = [rankOf(left), rankOf(right)];
  if (a !== b) return a - b;
  if (typeof left === "number" && typeof right === "number") return left - right;
  if (typeof left === "string" && typeof right === "string") return left < right ? -1 : left > right ? 1 : 0;
  if (typeof left === "boolean" && typeof right === "boolean") return Number(left) - Number(right);
  if (left === undefined || left === null) return 0;
  throw new Error("the model compares no objects");
}

function modelPasses(spec: FilterSpec, task: Task): boolean {
  switch (spec.op) {
    case "and":
      return spec.items.every((item) => modelPasses(item, task));
    case "or":
      return spec.items.some((item) => modelPasses(item, task));
    case "not":
      return !modelPasses(spec.item, task);
    default: {
      const order = modelCompare(fieldOfTask(task, spec.field), spec.value);
      return { eq: order === 0, neq: order !== 0, lt: order < 0, lte: order <= 0, gt: order > 0, gte: order >= 0 }[spec.op];
    }
  }
}

const COMPARISONS = ["eq", "neq", "lt", "lte", "gt", "gte"] as const;

/** A random comparison of a field (present, nested, an object, or missing) with a literal of its kind or another. */
function randomLeaf(random: SeededRandom, model: readonly Task[]): FilterSpec {
  const op = COMPARISONS[randomInt(random, COMPARISONS.length)]!;
  const pick = <T>(items: readonly T[]): T => items[randomInt(random, items.length)]!;
  const otherKind = (): Scalar => pick([undefined, null, true, -1, "m"]);
  const field = pick(["status", "status", "priority", "priority", "owner.city", "owner.city", "n", "owner", "missing", "owner.city.deeper"]);
  const literal: Scalar = (() => {
    if (random.float() < 0.1) return otherKind();
    switch (field) {
      case "status":
        return pick(STATUSES);
      case "priority":
        return randomInt(random, 7) - 0.5 * randomInt(random, 2);
      case "owner.city":
        return random.float() < 0.2 ? undefined : pick(CITIES);
      case "n":
        return pick(model).n;
      default:
        return random.float() < 0.5 ? undefined : pick(["x", 1]);
    }
  })();
  return literal === undefined ? { op, field } : { op, field, value: literal as string | number | boolean | null };
}

function randomSpec(random: SeededRandom, model: readonly Task[], depth = 0): FilterSpec {
  const roll = random.float();
  if (depth >= 3 || roll < 0.45) return randomLeaf(random, model);
  if (roll < 0.6) return { op: "not", item: randomSpec(random, model, depth + 1) };
  // Now and then an empty and/or (true/false).
  const count = random.float() < 0.05 ? 0 : 1 + randomInt(random, 3);
  return { op: roll < 0.8 ? "and" : "or", items: Array.from({ length: count }, () => randomSpec(random, model, depth + 1)) };
}

function expected(model: readonly Task[], filters: readonly FilterSpec[], order: Order): Task[] {
  const kept = model.filter((task) => filters.every((spec) => modelPasses(spec, task)));
  return kept.sort((a, b) => (order === "asc" ? a.n - b.n : b.n - a.n));
}

function overlaps(readRanges: readonly KeyRange[], writeRanges: readonly KeyRange[]): boolean {
  return readRanges.some((read) => writeRanges.some((write) => rangesOverlap(read, write)));
}

describe("query filters", () => {
  const harness = harnessPerTest(memoryBucket);

  async function setup(): Promise<FunctionRuntime> {
    const h = await harness();
    return runtimeOn(h, await h.writer("a"), filterApp);
  }

  const insert = (runtime: FunctionRuntime, tasks: readonly Task[]) => runtime.runMutation("tasks:insert", { tasks });

  /** Follows a query's pages from the start with random page sizes; checks each page's size. */
  async function allPages(
    random: SeededRandom,
    read: (paginationOpts: { cursor: string | null; numItems: number; endCursor?: string }) => Promise<Page>,
    what: string,
  ): Promise<{ rows: Doc[]; cursors: (string | null)[]; sizes: number[] }> {
    const rows: Doc[] = [];
    const cursors: (string | null)[] = [null];
    const sizes: number[] = [];
    for (let pages = 0; ; pages++) {
      expect(pages, what).toBeLessThan(1000);
      const numItems = 1 + randomInt(random, 50);
      const result = await read({ cursor: cursors[cursors.length - 1]!, numItems });
      // Page sizes hold with a filter: only the last page may be short (the scan limit is far away here).
      if (result.isDone) expect(result.page.length, what).toBeLessThanOrEqual(numItems);
      else expect(result.page.length, what).toBe(numItems);
      rows.push(...result.page);
      sizes.push(numItems);
      if (result.isDone) return { rows, cursors, sizes };
      cursors.push(result.continueCursor);
    }
  }

  it("random filters, chained and read every way in both orders, give exactly the model's rows", async () => {
    const runtime = await setup();
    const random = new SeededRandom(31);
    // 300 tasks with distinct n, inserted in a random order; about a third without an owner.
    const numbers = Array.from({ length: 600 }, (_, i) => i);
    for (let i = numbers.length - 1; i > 0; i--) {
      const j = randomInt(random, i + 1);
      [numbers[i], numbers[j]] = [numbers[j]!, numbers[i]!];
    }
    const model: Task[] = numbers.slice(0, 300).map((n) => {
      const fields = { n: n / 2, status: STATUSES[randomInt(random, STATUSES.length)]!, priority: randomInt(random, 6) };
      return random.float() < 0.35 ? fields : { ...fields, owner: { city: CITIES[randomInt(random, CITIES.length)]! } };
    });
    // One task with a status of its own, for unique.
    model.push({ n: 1000, status: "solo", priority: 3 });
    for (let i = 0; i < model.length; i += 100) await insert(runtime, model.slice(i, i + 100));

    const bySpec = async (filters: readonly FilterSpec[], order: Order, read: string, extra: Record<string, unknown> = {}) =>
      (await runtime.runQuery("tasks:bySpec", { filters, order, read, ...extra })).value as unknown;

    let nonEmpty = 0;
    let partial = 0;
    for (let round = 0; round < 24; round++) {
      const filters = Array.from({ length: 1 + randomInt(random, 3) }, () => randomSpec(random, model));
      for (const order of ["asc", "desc"] as const) {
        const want = expected(model, filters, order);
        const what = `round ${round} ${order} ${JSON.stringify(filters)}`;
        if (want.length > 0) nonEmpty++;
        if (want.length > 0 && want.length < model.length) partial++;

        const { rows } = await allPages(random, async (paginationOpts) => (await bySpec(filters, order, "paginate", { paginationOpts })) as Page, what);
        expect(rows.map(fieldsOf), what).toEqual(want);

        const count = randomInt(random, 40);
        expect(((await bySpec(filters, order, "take", { count })) as Doc[]).map(fieldsOf), what).toEqual(want.slice(0, count));
        const first = (await bySpec(filters, order, "first")) as Doc | null;
        expect(first === null ? null : fieldsOf(first), what).toEqual(want[0] ?? null);
        expect(((await bySpec(filters, order, "collect")) as Doc[]).map(fieldsOf), what).toEqual(want);
        // Chained filters are their AND, in one filter.
        expect(((await bySpec([{ op: "and", items: filters }], order, "collect")) as Doc[]).map(fieldsOf), what).toEqual(want);

        // unique: null for none, the row for one, QUERY_NOT_UNIQUE for more.
        if (want.length > 1) expect(hasErrorCode(await rejection(bySpec(filters, order, "unique")), "QUERY_NOT_UNIQUE"), what).toBe(true);
        else expect(await bySpec(filters, order, "unique"), what).toEqual(want.length === 0 ? null : expect.objectContaining(want[0]!));
        if (want.length > 0) {
          const one = want[randomInt(random, want.length)]!;
          const pinnedToOne = [...filters, { op: "eq", field: "n", value: one.n } as const];
          expect(fieldsOf((await bySpec(pinnedToOne, order, "unique")) as Doc), what).toEqual(one);
        }
      }
    }
    // The random filters were neither all empty nor all everything.
    expect(nonEmpty).toBeGreaterThan(20);
    expect(partial).toBeGreaterThan(15);

    // The filter chosen by arguments, through each of the app's named queries.
    for (let round = 0; round < 16; round++) {
      const status = STATUSES[randomInt(random, STATUSES.length)]!;
      const minPriority = randomInt(random, 7);
      const filters: FilterSpec[] = [{ op: "eq", field: "status", value: status }, { op: "gte", field: "priority", value: minPriority }];
      for (const order of ["asc", "desc"] as const) {
        const want = expected(model, filters, order);
        const what = `${status} ≥ ${minPriority} ${order}`;
        const args = { status, minPriority, order };
        const filtered = await allPages(random, async (paginationOpts) => (await runtime.runQuery("tasks:filtered", { ...args, paginationOpts })).value as unknown as Page, what);
        expect(filtered.rows.map(fieldsOf), what).toEqual(want);
        const chained = await allPages(random, async (paginationOpts) => (await runtime.runQuery("tasks:chained", { ...args, paginationOpts })).value as unknown as Page, what);
        expect(chained.rows.map(fieldsOf), what).toEqual(want);

        // The loaded pages pinned at their continueCursors read back the same rows, page by page.
        const { cursors, sizes } = filtered;
        const pinnedRows: Doc[] = [];
        for (let k = 0; k < cursors.length - 1; k++) {
          const pinned = (await runtime.runQuery("tasks:filtered", { ...args, paginationOpts: { cursor: cursors[k]!, numItems: sizes[k]!, endCursor: cursors[k + 1]! } })).value as unknown as Page;
          expect(pinned.page.length, what).toBe(sizes[k]);
          pinnedRows.push(...pinned.page);
        }
        const last = (await runtime.runQuery("tasks:filtered", { ...args, paginationOpts: { cursor: cursors[cursors.length - 1]!, numItems: sizes[sizes.length - 1]! } })).value as unknown as Page;
        expect(last.isDone, what).toBe(true);
        expect([...pinnedRows, ...last.page].map(fieldsOf), what).toEqual(want);

        const count = randomInt(random, 30);
        expect(((await runtime.runQuery("tasks:take", { ...args, count })).value as unknown as Doc[]).map(fieldsOf), what).toEqual(want.slice(0, count));
        const first = (await runtime.runQuery("tasks:first", args)).value as unknown as Doc | null;
        expect(first === null ? null : fieldsOf(first), what).toEqual(want[0] ?? null);
        expect(((await runtime.runQuery("tasks:collect", args)).value as unknown as Doc[]).map(fieldsOf), what).toEqual(want);
        if (want.length > 1) expect(hasErrorCode(await rejection(runtime.runQuery("tasks:unique", args)), "QUERY_NOT_UNIQUE"), what).toBe(true);
        else expect((await runtime.runQuery("tasks:unique", args)).value, what).toEqual(want.length === 0 ? null : expect.objectContaining(want[0]!));
      }
    }
    // A filter that exactly one task passes, read with unique (the named query), and one that none does.
    const solo = model.find((task) => task.status === "solo")!;
    expect(fieldsOf((await runtime.runQuery("tasks:unique", { status: "solo", minPriority: 0, order: "desc" })).value as unknown as Doc)).toEqual(solo);
    expect((await runtime.runQuery("tasks:unique", { status: "solo", minPriority: solo.priority + 1, order: "asc" })).value).toBeNull();

    // q.not(q.or(…)): neither of two statuses, paged.
    for (const order of ["asc", "desc"] as const) {
      const neither = await allPages(random, async (paginationOpts) => (await runtime.runQuery("tasks:neither", { a: "open", b: "done", paginationOpts, order })).value as unknown as Page, "neither");
      expect(neither.rows.map(fieldsOf)).toEqual(expected(model, [{ op: "not", item: { op: "or", items: [{ op: "eq", field: "status", value: "open" }, { op: "eq", field: "status", value: "done" }] } }], order));
      expect(neither.rows.every((doc) => !["open", "done"].includes(doc.status))).toBe(true);
    }
  });

  describe("a filtered read's read set is the rows it scanned, to the row", () => {
    /** 1,000 tasks n = 0…999; only every 10th is "open". */
    async function everyTenthOpen(): Promise<FunctionRuntime> {
      const runtime = await setup();
      await insert(
        runtime,
        Array.from({ length: 1000 }, (_, n) => ({ n, status: n % 10 === 0 ? "open" : "closed", priority: 1 })),
      );
      return runtime;
    }
    const patch = (runtime: FunctionRuntime, n: number, fields: { status?: string; priority?: number }) => runtime.runMutation("tasks:patchByN", { n, ...fields });

    it("take(3) reads one batch of 64 rows: writes past it never overlap, writes inside it always do", async () => {
      const runtime = await everyTenthOpen();
      const take3 = () => runtime.runQuery("tasks:take", { status: "open", minPriority: 0, count: 3, order: "asc" });
      const before = await take3();
      expect(ns(before.value as unknown as Doc[])).toEqual([0, 10, 20]);

      // Past the batch (rows 0…63): far away, the very next row, a row inserted right after the
      // last examined one, even a row made to match — none can change the result.
      for (const [what, write] of [
        ["a patch at n = 500", () => patch(runtime, 500, { priority: 9 })],
        ["a patch making n = 64 match", () => patch(runtime, 64, { status: "open" })],
        ["an insert at n = 63.5", () => insert(runtime, [{ n: 63.5, status: "open", priority: 5 }])],
        ["an insert at n = 2000", () => insert(runtime, [{ n: 2000, status: "open", priority: 5 }])],
      ] as const) {
        expect(overlaps(before.readRanges, (await write()).writeRanges), what).toBe(false);
      }
      expect(ns((await take3()).value as unknown as Doc[])).toEqual([0, 10, 20]);

      // Inside it: a non-matching row (its result cannot change yet, but a later write may make
      // it match), the last row examined, a matching row, an insert among the rows.
      for (const [what, write] of [
        ["a patch of non-matching n = 45", () => patch(runtime, 45, { priority: 2 })],
        ["a patch of the last row examined, n = 63", () => patch(runtime, 63, { priority: 2 })],
        ["a patch of matching n = 40 (not returned)", () => patch(runtime, 40, { priority: 2 })],
        ["an insert at n = 30.5", () => insert(runtime, [{ n: 30.5, status: "closed", priority: 1 }])],
      ] as const) {
        expect(overlaps(before.readRanges, (await write()).writeRanges), what).toBe(true);
      }

      // Flipping a non-matching row inside the scanned range: the overlap predicted a change, and there is one.
      const flip = await patch(runtime, 5, { status: "open" });
      expect(overlaps(before.readRanges, flip.writeRanges)).toBe(true);
      expect(ns((await take3()).value as unknown as Doc[])).toEqual([0, 5, 10]);
    });

    it("a filtered page, first and a descending take record the batches they read", async () => {
      const runtime = await everyTenthOpen();
      const page = await runtime.runQuery("tasks:filtered", { status: "open", minPriority: 0, paginationOpts: { cursor: null, numItems: 3 }, order: "asc" });
      expect(ns((page.value as unknown as Page).page)).toEqual([0, 10, 20]);
      const first = await runtime.runQuery("tasks:first", { status: "open", minPriority: 0, order: "asc" });
      expect((first.value as unknown as Doc).n).toBe(0);
      const desc = await runtime.runQuery("tasks:take", { status: "open", minPriority: 0, count: 3, order: "desc" });
      expect(ns(desc.value as unknown as Doc[])).toEqual([990, 980, 970]);
      // take(10): 64 rows give 7 matches (0…60), then a second batch of max(2 × 3, 64) rows, 64…127, gives 70, 80, 90.
      const take10 = await runtime.runQuery("tasks:take", { status: "open", minPriority: 0, count: 10, order: "asc" });
      expect(ns(take10.value as unknown as Doc[])).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);

      const writes = async (n: number) => (await patch(runtime, n, { priority: 3 })).writeRanges;
      const [at63, at64, at127, at128, at935, at936] = [await writes(63), await writes(64), await writes(127), await writes(128), await writes(935), await writes(936)];
      expect(overlaps(page.readRanges, at63)).toBe(true);
      expect(overlaps(page.readRanges, at64)).toBe(false);
      expect(overlaps(first.readRanges, at63)).toBe(true);
      expect(overlaps(first.readRanges, at64)).toBe(false);
      expect(overlaps(take10.readRanges, at127)).toBe(true);
      expect(overlaps(take10.readRanges, at128)).toBe(false);
      // Descending: rows 999 down to 936 were examined.
      expect(overlaps(desc.readRanges, at936)).toBe(true);
      expect(overlaps(desc.readRanges, at935)).toBe(false);
      expect(overlaps(desc.readRanges, at63)).toBe(false);
    });
  });

  it(`a filter matching little over more than ${QUERY_FILTER_SCAN_ROWS_MAX} rows gives short pages, not done, and its cursors reach every row`, async () => {
    const runtime = await setup();
    const total = QUERY_FILTER_SCAN_ROWS_MAX + 500;
    for (let from = 0; from < total; from += 500) await runtime.runMutation("tasks:bulkInsert", { from, count: 500, status: "closed", priority: 1 });
    const pageOf = (cursor: string | null, order: Order, numItems = 10) => runtime.runQuery("tasks:filtered", { status: "open", minPriority: 0, paginationOpts: { cursor, numItems }, order });

    // Nothing matches: an empty page that is not done, its cursor after the last row read (n = LIMIT - 1).
    const first = await pageOf(null, "asc");
    expect(first.value).toMatchObject({ page: [], isDone: false, continueCursor: expect.any(String) });
    const atLast = await runtime.runMutation("tasks:patchByN", { n: QUERY_FILTER_SCAN_ROWS_MAX - 1, priority: 2 });
    const pastLast = await runtime.runMutation("tasks:patchByN", { n: QUERY_FILTER_SCAN_ROWS_MAX, priority: 2 });
    expect(overlaps(first.readRanges, atLast.writeRanges)).toBe(true);
    expect(overlaps(first.readRanges, pastLast.writeRanges)).toBe(false);
    const second = await pageOf((first.value as unknown as Page).continueCursor, "asc");
    expect(second.value).toMatchObject({ page: [], isDone: true });
    // Descending, the same, from the other end.
    const down = (await pageOf(null, "desc")).value as unknown as Page;
    expect(down).toMatchObject({ page: [], isDone: false });
    expect((await pageOf(down.continueCursor, "desc")).value).toMatchObject({ page: [], isDone: true });

    // Two matches, one each side of the limit: a short page (not done), then the other row, done.
    await runtime.runMutation("tasks:patchByN", { n: 100, status: "open" });
    await runtime.runMutation("tasks:patchByN", { n: QUERY_FILTER_SCAN_ROWS_MAX, status: "open" });
    for (const order of ["asc", "desc"] as const) {
      const rows: number[] = [];
      const shapes: [number, boolean][] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const result = (await pageOf(cursor, order)).value as unknown as Page;
        rows.push(...ns(result.page));
        shapes.push([result.page.length, result.isDone]);
        if (result.isDone) break;
        cursor = result.continueCursor;
      }
      expect(rows).toEqual(order === "asc" ? [100, QUERY_FILTER_SCAN_ROWS_MAX] : [QUERY_FILTER_SCAN_ROWS_MAX, 100]);
      expect(shapes, order).toEqual([
        [1, false],
        [1, true],
      ]);
    }
    // The limit applies to unpinned pages only; a range within it answers full pages as before.
    const full = (await runtime.runQuery("tasks:filtered", { status: "closed", minPriority: 0, paginationOpts: { cursor: null, numItems: 50 }, order: "asc" })).value as unknown as Page;
    expect(full.page).toHaveLength(50);
    expect(full.isDone).toBe(false);
  });

  describe("missing fields and kinds", () => {
    /** 40 tasks: n % 4 == 0 has no owner, the rest live in bergen or oslo; priorities 0…4. */
    const tasks: Task[] = Array.from({ length: 40 }, (_, n) => {
      const fields = { n, status: STATUSES[n % 3]!, priority: n % 5 };
      return n % 4 === 0 ? fields : { ...fields, owner: { city: n % 2 === 0 ? "bergen" : "oslo" } };
    });
    const ownerless = tasks.filter((task) => task.owner === undefined).map((task) => task.n);
    const owned = tasks.filter((task) => task.owner !== undefined).map((task) => task.n);

    it("a missing field is undefined: equal only to undefined, below every value", async () => {
      const runtime = await setup();
      await insert(runtime, tasks);
      const collected = async (path: string, args: Record<string, unknown>, order: Order = "asc") => ns((await runtime.runQuery(path, { order, ...args })).value as unknown as Doc[]);

      expect(await collected("tasks:ofCity", {})).toEqual(ownerless);
      expect(await collected("tasks:ofCity", {}, "desc")).toEqual([...ownerless].reverse());
      expect(await collected("tasks:ofCity", { city: "oslo" })).toEqual(tasks.filter((task) => task.owner?.city === "oslo").map((task) => task.n));
      // Nothing is below the empty string but undefined; "a" sorts before both cities.
      expect(await collected("tasks:cityBelow", { bound: "" })).toEqual(ownerless);
      expect(await collected("tasks:cityBelow", { bound: "a" })).toEqual(ownerless);
      expect(await collected("tasks:cityBelow", { bound: "c" })).toEqual(tasks.filter((task) => task.owner === undefined || task.owner.city === "bergen").map((task) => task.n));

      // neq on a field that may be missing, or is missing everywhere.
      expect(await collected("tasks:neq", { field: "owner.city" })).toEqual(owned);
      expect(await collected("tasks:neq", { field: "owner" })).toEqual(owned);
      expect(await collected("tasks:neq", { field: "nope", value: 1 })).toEqual(tasks.map((task) => task.n));
      expect(await collected("tasks:neq", { field: "nope", value: null })).toEqual(tasks.map((task) => task.n));
      expect(await collected("tasks:neq", { field: "nope" })).toEqual([]);
      // A path through a non-object (a string, a number) is missing too.
      expect(await collected("tasks:neq", { field: "status.length" })).toEqual([]);
      expect(await collected("tasks:neq", { field: "owner.city.length" })).toEqual([]);

      const bySpec = async (spec: FilterSpec) => ns((await runtime.runQuery("tasks:bySpec", { filters: [spec], order: "asc", read: "collect" })).value as unknown as Doc[]);
      // undefined is not null, and is below null.
      expect(await bySpec({ op: "eq", field: "owner.city", value: null })).toEqual([]);
      expect(await bySpec({ op: "lt", field: "owner.city", value: null })).toEqual(ownerless);
      expect(await bySpec({ op: "lte", field: "owner", value: null })).toEqual(ownerless);
      expect(await bySpec({ op: "gt", field: "owner.city" })).toEqual(owned);
      expect(await bySpec({ op: "gte", field: "missing" })).toEqual(tasks.map((task) => task.n));
      expect(await bySpec({ op: "gt", field: "missing" })).toEqual([]);
      // not(eq(…, x)) on a missing field passes; the expression is exactly true or the row is out.
      expect(await bySpec({ op: "not", item: { op: "eq", field: "owner.city", value: "oslo" } })).toEqual(tasks.filter((task) => task.owner?.city !== "oslo").map((task) => task.n));
    });

    it("comparisons across kinds follow compareValues", async () => {
      const runtime = await setup();
      await insert(runtime, tasks);
      const collected = async (op: string, field: string, value: unknown) =>
        ns((await runtime.runQuery("tasks:bySpec", { filters: [{ op, field, value }], order: "asc", read: "collect" })).value as unknown as Doc[]);
      // Literals of every kind, around the priorities 0…4 and the statuses.
      const literals: Value[] = [null, false, true, -Infinity, -1, -0, 0, 2, 2.5, 4, Infinity, NaN, 1n, -1n, "", "0", "closed", "open", "zzz", new Uint8Array([0]), [], [0], {}, { a: 1 }];
      const ops: Record<string, (order: number) => boolean> = {
        eq: (order) => order === 0,
        neq: (order) => order !== 0,
        lt: (order) => order < 0,
        lte: (order) => order <= 0,
        gt: (order) => order > 0,
        gte: (order) => order >= 0,
      };
      for (const field of ["priority", "status"] as const) {
        for (const literal of literals) {
          for (const [op, holds] of Object.entries(ops)) {
            const want = tasks.filter((task) => holds(compareValues(task[field], literal))).map((task) => task.n);
            expect(await collected(op, field, literal), `${field} ${op} ${String(literal)}`).toEqual(want);
          }
        }
      }
      // The headline cases spelled out: a number is below every string and above null and booleans; no coercion.
      const everything = tasks.map((task) => task.n);
      expect(await collected("lt", "priority", "")).toEqual(everything);
      expect(await collected("gt", "status", Number.MAX_VALUE)).toEqual(everything);
      expect(await collected("gt", "priority", true)).toEqual(everything);
      expect(await collected("eq", "priority", "1")).toEqual([]);
      expect(await collected("eq", "priority", 1n)).toEqual([]);
      // -0 is below +0 in the index order (priority 0 is +0).
      expect(await collected("eq", "priority", -0)).toEqual([]);
      expect(await collected("gt", "priority", -0)).toEqual(everything);
    });
  });

  describe("malformed filters fail the query with INVALID_ARGUMENT", () => {
    const cases = [
      "filter of a string",
      "filter of an expression",
      "empty field",
      "empty path segment",
      "leading dot",
      "trailing dot",
      "field of a number",
      "field of a bigint",
      "filter that returns nothing",
      "filter that returns a boolean",
      "function operand",
      "Date operand",
      "Symbol operand",
      "function inside and",
      "Date inside an object operand",
      "cyclic operand",
    ];

    it("each case is a failed run with INVALID_ARGUMENT that read nothing", async () => {
      const runtime = await setup();
      await insert(runtime, [{ n: 1, status: "open", priority: 1 }]);
      for (const which of cases) {
        const run = await runtime.runQueryRecorded("tasks:bad", { which });
        expect(run.outcome.kind, which).toBe("failed");
        const error = run.outcome.kind === "failed" ? (run.outcome.error as { code?: string; message?: string }) : {};
        expect(error.code, `${which}: ${error.message}`).toBe("INVALID_ARGUMENT");
        expect(error.message, which).toMatch(/^query: (filter takes a function|filter's function must return a q expression|q\.field takes a field name|a filter operand must be)/);
        // Refused when the filter is built, before the query reads a row.
        expect(run.readRanges, which).toEqual([]);
        // runQuery throws the same.
        expect(hasErrorCode(await rejection(runtime.runQuery("tasks:bad", { which })), "INVALID_ARGUMENT"), which).toBe(true);
      }
    });

  });
});
