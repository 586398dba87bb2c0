/**
 * Scenario: the page bookkeeping of usePaginatedQuery, driven with plain values (no
 * React, no client): a first page answers, a second is loaded (the first is pinned at
 * the cursor the second starts from, and shows its last rows until the pinned answer
 * comes), a late answer of the dropped subscription is ignored, rows inserted into the
 * pinned page show there, the last page reaches the end, a page fails and recovers, and
 * every subscription is dropped with the last subscriber and made again with the next.
 */
import { describe, expect, it } from "vitest";
import type { CairnError } from "../../src/client/index.js";
import type { PaginationOptions, PaginationResult } from "../../src/functions/index.js";
import { PaginatedPages } from "../../src/react/PaginatedPages.js";

interface PageSubscription {
  readonly options: PaginationOptions;
  readonly answer: (page: number[], isDone: boolean, continueCursor: string) => void;
  readonly fail: (error: CairnError) => void;
  dropped: boolean;
}

function pagesOf(initialNumItems: number) {
  const subscriptions: PageSubscription[] = [];
  const pages = new PaginatedPages<number>((options, onResult, onError) => {
    const subscription: PageSubscription = {
      options,
      answer: (page, isDone, continueCursor) => onResult({ page, isDone, continueCursor } satisfies PaginationResult<number>),
      fail: onError,
      dropped: false,
    };
    subscriptions.push(subscription);
    return () => (subscription.dropped = true);
  }, initialNumItems);
  const live = () => subscriptions.filter((subscription) => !subscription.dropped);
  return { pages, subscriptions, live };
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
});
