import type { CairnError } from "../client/index.js";
import type { PaginationOptions, PaginationResult } from "../functions/index.js";

/**
 * The pages of one paginated query, as a store for `useSyncExternalStore`, free of React
 * and of the client: it subscribes each page through `subscribePage`.
 *
 * Invariants:
 * - the pages partition the query's range in order: every page but the last is pinned
 *   (`endCursor` = the cursor the next page starts from), so a row inserted anywhere in
 *   the loaded part lands in exactly one page, and one deleted leaves no hole; only the
 *   last page is open-ended (`numItems` rows after its cursor);
 * - loading a page pins the last one at the continueCursor of the result it shows, and
 *   starts the new one from that same cursor; until the pinned subscription answers, the
 *   last page shows that result (it covers the same rows), so nothing flickers;
 * - pages are subscribed while the store has subscribers, and all dropped when it has none.
 *
 * Status, from the pages' results:
 *
 *   LoadingFirstPage   the first page has no result yet
 *   LoadingMore        the last page (just added) has no result yet
 *   Exhausted          the last page reached the end of the range
 *   CanLoadMore        otherwise: `loadMore(n)` adds a page
 *
 * A page that fails (its query throws; a pinned page grew past QUERY_PAGE_ITEMS_MAX) puts
 * the whole store in error until its query answers again.
 */

export type PaginationStatus = "LoadingFirstPage" | "CanLoadMore" | "LoadingMore" | "Exhausted";

export interface PaginatedState<Item> {
  readonly results: readonly Item[];
  readonly status: PaginationStatus;
  readonly error: CairnError | null;
}

/** Subscribes one page's query; returns the function that drops the subscription. */
export type SubscribePage<Item> = (
  paginationOpts: PaginationOptions,
  onResult: (result: PaginationResult<Item>) => void,
  onError: (error: CairnError) => void,
) => () => void;

interface Page<Item> {
  readonly options: PaginationOptions;
  /** The answer to `options`, latest first; null until it comes. */
  result: PaginationResult<Item> | null;
  /** What the page showed before it was pinned: the same rows, shown until `result` comes. */
  readonly shownBefore: PaginationResult<Item> | null;
  error: CairnError | null;
  unsubscribe: (() => void) | null;
}

export class PaginatedPages<Item> {
  private pages: Page<Item>[];
  private readonly listeners = new Set<() => void>();
  private state: PaginatedState<Item> = { results: [], status: "LoadingFirstPage", error: null };

  constructor(
    private readonly subscribePage: SubscribePage<Item>,
    initialNumItems: number,
  ) {
    this.pages = [newPage<Item>({ cursor: null, numItems: initialNumItems }, null)];
  }

  readonly subscribe = (onChange: () => void): (() => void) => {
    this.listeners.add(onChange);
    if (this.listeners.size === 1) for (const page of this.pages) this.attach(page);
    return () => {
      this.listeners.delete(onChange);
      if (this.listeners.size === 0) for (const page of this.pages) detach(page);
    };
  };

  readonly getSnapshot = (): PaginatedState<Item> => this.state;

  /** Adds a page of `numItems` rows after the loaded ones; false (and nothing changes) unless the status is CanLoadMore. */
  readonly loadMore = (numItems: number): boolean => {
    if (this.state.status !== "CanLoadMore") return false;
    const last = this.pages[this.pages.length - 1]!;
    const shown = last.result ?? last.shownBefore!;
    detach(last);
    const pinned = newPage<Item>({ ...last.options, endCursor: shown.continueCursor }, shown);
    const next = newPage<Item>({ cursor: shown.continueCursor, numItems }, null);
    this.pages = [...this.pages.slice(0, -1), pinned, next];
    if (this.listeners.size > 0) {
      this.attach(pinned);
      this.attach(next);
    }
    this.changed();
    return true;
  };

  private attach(page: Page<Item>): void {
    if (page.unsubscribe !== null) return;
    let attached = true;
    let stop: (() => void) | null = null;
    page.unsubscribe = () => {
      attached = false;
      stop?.();
    };
    // Answers to a page detached, replaced or dropped meanwhile are ignored; one may come during subscribePage itself.
    const live = () => attached && this.pages.includes(page);
    stop = this.subscribePage(
      page.options,
      (result) => {
        if (!live()) return;
        page.result = result;
        page.error = null;
        this.changed();
      },
      (error) => {
        if (!live()) return;
        page.error = error;
        this.changed();
      },
    );
    if (!attached) stop();
  }

  private changed(): void {
    this.state = stateOf(this.pages);
    for (const listener of [...this.listeners]) listener();
  }
}

function newPage<Item>(options: PaginationOptions, shownBefore: PaginationResult<Item> | null): Page<Item> {
  return { options, result: null, shownBefore, error: null, unsubscribe: null };
}

function detach(page: Page<unknown>): void {
  const unsubscribe = page.unsubscribe;
  page.unsubscribe = null;
  unsubscribe?.();
}

function stateOf<Item>(pages: readonly Page<Item>[]): PaginatedState<Item> {
  const error = pages.find((page) => page.error !== null)?.error ?? null;
  const results: Item[] = [];
  for (const page of pages) {
    const shown = page.result ?? page.shownBefore;
    if (shown === null) return { results, status: page === pages[0] ? "LoadingFirstPage" : "LoadingMore", error };
    results.push(...shown.page);
  }
  const last = pages[pages.length - 1]!;
  return { results, status: (last.result ?? last.shownBefore)!.isDone ? "Exhausted" : "CanLoadMore", error };
}
