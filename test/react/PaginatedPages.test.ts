/**
 * Scenario: the page bookkeeping of usePaginatedQuery, driven with plain values (no
 * React, no client): a first page answers, a second is loaded (the first is pinned at
 * the cursor the second starts from, and shows its last rows until the pinned answer
 * comes), a late answer of the dropped subscription is ignored, rows inserted into the
 * pinned page show there, the last page reaches the end, a page fails and recovers, and
 * every subscription is dropped with the last subscriber and made again with the next.
 * Then splits: a pinned page that answers with a splitCursor is replaced by its two
 * halves, and every list shown meanwhile (in ascending and in descending order) holds the
 * rows of the page once and in order, never a gap; a partial answer is never shown, a
 * half that splits again joins the same replacement, and answers of the replaced page are
 * ignored.
 */
import { describe, expect, it } from "vitest";
import type { CairnError } from "../../src/client/index.js";
import type { PaginationOptions, PaginationResult } from "../../src/functions/index.js";
import { PaginatedPages } from "../../src/react/PaginatedPages.js";

interface Split {
  readonly splitCursor: string;
  readonly pageStatus: "SplitRecommended" | "SplitRequired";
}

interface PageSubscription {
  readonly options: PaginationOptions;
  readonly answer: (page: number[], isDone: boolean, continueCursor: string, split?: Split) => void;
  readonly fail: (error: CairnError) => void;
  dropped: boolean;
}

function pagesOf(initialNumItems: number) {
  const subscriptions: PageSubscription[] = [];
  const pages = new PaginatedPages<number>((options, onResult, onError) => {
    const subscription: PageSubscription = {
      options,
      answer: (page, isDone, continueCursor, split) => onResult({ page, isDone, continueCursor, ...split } satisfies PaginationResult<number>),
      fail: onError,
      dropped: false,
    };
    subscriptions.push(subscription);
    return () => (subscription.dropped = true);
  }, initialNumItems);
  const live = () => subscriptions.filter((subscription) => !subscription.dropped);
  /** The live subscription of the page from `cursor` to `endCursor` (undefined: open-ended). */
  const page = (cursor: string | null, endCursor?: string) => {
    const found = live().filter((s) => s.options.cursor === cursor && s.options.endCursor === endCursor);
    expect(found, `one live page ${cursor}..${endCursor}`).toHaveLength(1);
    return found[0]!;
  };
  return { pages, subscriptions, live, page };
}

describe("PaginatedPages", () => {
  it("pins the last page at its continueCursor when loading the next, and keeps every row once", () => {
    const { pages, subscriptions, live } = pagesOf(3);
    expect(subscriptions).toHaveLength(0);
    let changes = 0;
    const unsubscribe = pages.subscribe(() => changes++);
    expect(live().map((s) => s.options)).toEqual([{ cursor: null, numItems: 3 }]);
    expect(pages.getSnapshot()).toEqual({ results: [], status: "LoadingFirstPage", error: null });
    expect(pages.loadMore(3)).toBe(false);

    const first = subscriptions[0]!;
    first.answer([1, 2, 3], false, "c3");
    expect(pages.getSnapshot()).toMatchObject({ results: [1, 2, 3], status: "CanLoadMore" });

    expect(pages.loadMore(2)).toBe(true);
    expect(first.dropped).toBe(true);
    expect(live().map((s) => s.options)).toEqual([
      { cursor: null, numItems: 3, endCursor: "c3" },
      { cursor: "c3", numItems: 2 },
    ]);
    // Until the pinned page answers, it shows what the open page showed: no flicker, no row twice.
    expect(pages.getSnapshot()).toMatchObject({ results: [1, 2, 3], status: "LoadingMore" });
    expect(pages.loadMore(2)).toBe(false);
    const before = changes;
    first.answer([0, 1, 2], false, "c2"); // late, from the dropped open-ended subscription
    expect(changes).toBe(before);
    expect(pages.getSnapshot().results).toEqual([1, 2, 3]);

    const [pinned, second] = live();
    pinned!.answer([0, 1, 2, 2.5, 3], false, "c3");
    second!.answer([4, 5], true, "done");
    expect(pages.getSnapshot()).toMatchObject({ results: [0, 1, 2, 2.5, 3, 4, 5], status: "Exhausted" });
    expect(pages.loadMore(2)).toBe(false);

    // The last page is open-ended: an insert past the end makes more loadable.
    second!.answer([4, 5], false, "c5");
    expect(pages.getSnapshot().status).toBe("CanLoadMore");

    const error = { code: "FUNCTION_LIMIT_EXCEEDED", message: "too big" } as CairnError;
    pinned!.fail(error);
    expect(pages.getSnapshot().error).toBe(error);
    pinned!.answer([0, 1, 3], false, "c3");
    expect(pages.getSnapshot()).toMatchObject({ results: [0, 1, 3, 4, 5], error: null });

    unsubscribe();
    expect(live()).toHaveLength(0);
    pages.subscribe(() => undefined);
    expect(live().map((s) => s.options)).toEqual([
      { cursor: null, numItems: 3, endCursor: "c3" },
      { cursor: "c3", numItems: 2 },
    ]);
    // The results shown stay until the new subscriptions answer.
    expect(pages.getSnapshot().results).toEqual([0, 1, 3, 4, 5]);
  });

  it("takes an answer or error given while the page is being subscribed, and ignores a detached page's", () => {
    const error = { code: "VALUE_INVALID", message: "not a value" } as CairnError;
    const pages = new PaginatedPages<number>((_options, _onResult, onError) => {
      onError(error);
      return () => undefined;
    }, 2);
    const stop = pages.subscribe(() => undefined);
    expect(pages.getSnapshot()).toMatchObject({ status: "LoadingFirstPage", error });
    stop();

    let late: ((result: PaginationResult<number>) => void) | null = null;
    const detached = new PaginatedPages<number>((_options, onResult) => {
      late = onResult;
      return () => undefined;
    }, 2);
    detached.subscribe(() => undefined)();
    late!({ page: [1], isDone: true, continueCursor: "x" });
    expect(detached.getSnapshot().status).toBe("LoadingFirstPage");
  });

  for (const order of ["asc", "desc"] as const) {
    // Rows as the query orders them: k-th in ascending order is k, in descending order -k.
    const row = (k: number) => (order === "asc" ? k : -k);
    const rows = (...ks: number[]) => ks.map(row);

    /** Pages [1,2,3] pinned at c3 and [4,5,6] open after it, both answered; every list shown is recorded. */
    function twoPages() {
      const { pages, subscriptions, live, page } = pagesOf(3);
      const shown: (readonly number[])[] = [];
      pages.subscribe(() => shown.push(pages.getSnapshot().results));
      subscriptions[0]!.answer(rows(1, 2, 3), false, "c3");
      pages.loadMore(3);
      const [pinned, next] = live();
      pinned!.answer(rows(1, 2, 3), false, "c3");
      next!.answer(rows(4, 5, 6), false, "c6");
      shown.length = 0; // from here on, every list must hold all of 1..6
      const expectEveryListWhole = (existing: readonly number[]) => {
        for (const list of shown) {
          expect(list, `${order}: ${list}`).toEqual([...list].sort((a, b) => (order === "asc" ? a - b : b - a)));
          expect(new Set(list).size).toBe(list.length);
          for (const k of existing) expect(list, `${order}: ${list} lacks ${row(k)}`).toContain(row(k));
        }
      };
      return { pages, subscriptions, live, page, pinned: pinned!, next: next!, shown, expectEveryListWhole };
    }

    it(`splits a pinned page that asks for it into two pinned halves, showing its rows until both answer (${order})`, () => {
      const { pages, live, page, pinned, next, shown, expectEveryListWhole } = twoPages();
      pinned.answer(rows(1, 1.5, 2, 2.5, 3, 3.5, 3.7), false, "c3", { splitCursor: "s2", pageStatus: "SplitRecommended" });
      expect(pinned.dropped).toBe(true);
      expect(live()).toHaveLength(3);
      const [firstHalf, secondHalf] = [page(null, "s2"), page("s2", "c3")];
      expect(firstHalf.options.numItems).toBe(3);
      const whole = rows(1, 1.5, 2, 2.5, 3, 3.5, 3.7, 4, 5, 6);
      expect(pages.getSnapshot()).toMatchObject({ results: whole, status: "CanLoadMore" });

      // One half answers (with a row the old page never showed): the old rows stay until the other does.
      firstHalf!.answer(rows(1, 1.2, 1.5, 2), false, "s2");
      expect(pages.getSnapshot().results).toEqual(whole);
      pinned.answer(rows(1, 2), false, "c3"); // late, from the replaced page
      expect(pages.getSnapshot().results).toEqual(whole);
      // The page after the split answers meanwhile: it shows at once, after the stand-in.
      next.answer(rows(4, 5, 6, 6.5), false, "c6");
      expect(pages.getSnapshot().results).toEqual([...whole, row(6.5)]);
      secondHalf!.answer(rows(2.5, 3, 3.5, 3.7), false, "c3");
      expect(pages.getSnapshot()).toMatchObject({ results: rows(1, 1.2, 1.5, 2, 2.5, 3, 3.5, 3.7, 4, 5, 6, 6.5), status: "CanLoadMore" });
      // Once both answered, each half shows its own answers.
      secondHalf!.answer(rows(2.5, 3), false, "c3");
      expect(pages.getSnapshot().results).toEqual(rows(1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 6.5));
      expectEveryListWhole([1, 2, 3, 4, 5, 6]);
      expect(shown.length).toBeGreaterThan(4);
    });

    it(`never shows a partial page: it splits at once, a half that splits again joins the same replacement (${order})`, () => {
      const { pages, live, page, pinned, expectEveryListWhole } = twoPages();
      const before = rows(1, 2, 3, 4, 5, 6);
      // The page's range outgrew one read: its first rows only, partial. The list keeps what it showed.
      pinned.answer(rows(1, 1.1, 1.2, 1.3), false, "c3", { splitCursor: "s1.1", pageStatus: "SplitRequired" });
      expect(pages.getSnapshot()).toMatchObject({ results: before, status: "CanLoadMore" });
      const [firstHalf, secondHalf] = [page(null, "s1.1"), page("s1.1", "c3")];
      firstHalf!.answer(rows(1, 1.1), false, "s1.1");
      // The second half is still too big: it splits too, and its halves replace the same page.
      secondHalf!.answer(rows(1.2, 1.3, 1.4, 1.5), false, "c3", { splitCursor: "s1.4", pageStatus: "SplitRequired" });
      expect(pages.getSnapshot().results).toEqual(before);
      const quarters = [page("s1.1", "s1.4"), page("s1.4", "c3")];
      quarters[1]!.answer(rows(1.5, 2, 3), false, "c3");
      expect(pages.getSnapshot().results).toEqual(before);
      quarters[0]!.answer(rows(1.2, 1.3, 1.4), false, "s1.4");
      expect(pages.getSnapshot().results).toEqual(rows(1, 1.1, 1.2, 1.3, 1.4, 1.5, 2, 3, 4, 5, 6));
      expect(live()).toHaveLength(4);
      expectEveryListWhole([1, 2, 3, 4, 5, 6]);
    });
  }

  it("splits a page pinned by loadMore at its first answer, showing that answer until both halves answer", () => {
    const { pages, subscriptions, page } = pagesOf(2);
    pages.subscribe(() => undefined);
    subscriptions[0]!.answer([1, 2], false, "c2");
    pages.loadMore(2);
    page(null, "c2").answer([1, 1.5, 1.7, 1.9, 2], false, "c2", { splitCursor: "s1.5", pageStatus: "SplitRecommended" });
    expect(pages.getSnapshot()).toMatchObject({ results: [1, 1.5, 1.7, 1.9, 2], status: "LoadingMore" });
    const [firstHalf, secondHalf, next] = [page(null, "s1.5"), page("s1.5", "c2"), page("c2")];
    secondHalf.answer([1.7, 2], false, "c2");
    next.answer([3, 4], true, "done");
    expect(pages.getSnapshot()).toMatchObject({ results: [1, 1.5, 1.7, 1.9, 2, 3, 4], status: "Exhausted" });
    firstHalf.answer([1, 1.5], false, "s1.5");
    expect(pages.getSnapshot()).toMatchObject({ results: [1, 1.5, 1.7, 2, 3, 4], status: "Exhausted" });
  });

  it("does not split an open-ended page, nor at a splitCursor that is one of the page's own ends", () => {
    const { pages, subscriptions, live } = pagesOf(2);
    pages.subscribe(() => undefined);
    subscriptions[0]!.answer([1, 2, 3, 4, 5], false, "c5", { splitCursor: "s2", pageStatus: "SplitRecommended" });
    expect(live()).toHaveLength(1);
    pages.loadMore(2);
    const [pinned] = live();
    pinned!.answer([1, 2, 3, 4, 5], false, "c5", { splitCursor: "c5", pageStatus: "SplitRecommended" });
    pinned!.answer([1, 2, 3, 4, 5], false, "c5", { splitCursor: null as never, pageStatus: "SplitRecommended" });
    expect(pinned!.dropped).toBe(false);
    expect(live()).toHaveLength(2);
  });

  it("re-subscribes a split page's halves, not the page, after the last subscriber left and a new one came", () => {
    const { pages, subscriptions, live, page } = pagesOf(2);
    const stop = pages.subscribe(() => undefined);
    subscriptions[0]!.answer([1, 2], false, "c2");
    pages.loadMore(2);
    page(null, "c2").answer([1, 1.5, 1.7, 2], false, "c2", { splitCursor: "s1.5", pageStatus: "SplitRecommended" });
    stop();
    expect(live()).toHaveLength(0);
    pages.subscribe(() => undefined);
    expect(live().map((s) => s.options)).toEqual([
      { cursor: null, numItems: 2, endCursor: "s1.5" },
      { cursor: "s1.5", numItems: 2, endCursor: "c2" },
      { cursor: "c2", numItems: 2 },
    ]);
    // What the split page showed stays until its halves answer.
    expect(pages.getSnapshot().results).toEqual([1, 1.5, 1.7, 2]);
  });
});
