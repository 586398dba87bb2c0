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
 *   starts the new one from that same cursor;
 * - a pinned page whose answer carries a splitCursor (it grew past 2 × numItems, or past
 *   what one read returns) is replaced by two pinned pages, [cursor, splitCursor] and
 *   [splitCursor, endCursor], which together cover the same rows;
 * - a page that replaces others (pinned, or a half of a split) shares a stand-in with
 *   the other pages replacing the same one: the rows shown before. Until every page
 *   sharing it has a result, the stand-in is shown once in their place, so a replacement
 *   never shows a gap, a row twice, or a flicker;
 * - a partial answer (SplitRequired) is never shown: the page keeps showing what it
 *   showed, and is split at once;
 * - pages are subscribed while the store has subscribers, and all dropped when it has none.
 *
 * Status, from the pages' results:
 *
 *   LoadingFirstPage   the first page has no result yet
 *   LoadingMore        the last page (just added) has no result yet
 *   Exhausted          the last page reached the end of the range
 *   CanLoadMore        otherwise: `loadMore(n)` adds a page
 *
 * A page that fails (its query throws) puts the whole store in error until its query
 * answers again.
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
  /** The latest complete answer to `options`; null until one comes. */
  result: PaginationResult<Item> | null;
  /** Shown in place of this page and the others sharing it, until each has a result; then null. */
  standIn: StandIn<Item> | null;
  error: CairnError | null;
  unsubscribe: (() => void) | null;
}

/** The rows one page showed before it was replaced (pinned, or split), shared by the pages replacing it. */
interface StandIn<Item> {
  readonly shown: PaginationResult<Item>;
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
    const shown = last.standIn?.shown ?? last.result!;
    const pinned = newPage<Item>({ ...last.options, endCursor: shown.continueCursor }, last.standIn ?? { shown });
    const next = newPage<Item>({ cursor: shown.continueCursor, numItems }, null);
    this.replace(last, [pinned, next]);
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
        this.answered(page, result);
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

  private answered(page: Page<Item>, result: PaginationResult<Item>): void {
    page.error = null;
    // A partial page (its range holds more than one read returns) is never shown: what the page showed stays until its halves answer.
    if (result.pageStatus !== "SplitRequired") page.result = result;
    this.settle(page.standIn);
    if (splits(page.options, result)) this.split(page, result.splitCursor!);
  }

  /** Once every page sharing `standIn` has a result, they show their own. */
  private settle(standIn: StandIn<Item> | null): void {
    if (standIn === null) return;
    const sharing = this.pages.filter((other) => other.standIn === standIn);
    if (sharing.every((other) => other.result !== null)) for (const other of sharing) other.standIn = null;
  }

  /**
   * Replaces a pinned page by its two halves, which show what it showed until both
   * answer: its result, or, while it still stands in for an earlier page with others, that
   * page's rows (the halves join the others).
   */
  private split(page: Page<Item>, splitCursor: string): void {
    const shown = page.standIn ?? (page.result === null ? null : { shown: page.result });
    const first = newPage<Item>({ ...page.options, endCursor: splitCursor }, shown);
    const second = newPage<Item>({ ...page.options, cursor: splitCursor }, shown);
    this.replace(page, [first, second]);
  }

  private replace(page: Page<Item>, by: readonly Page<Item>[]): void {
    detach(page);
    const at = this.pages.indexOf(page);
    this.pages = [...this.pages.slice(0, at), ...by, ...this.pages.slice(at + 1)];
    if (this.listeners.size > 0) for (const added of by) this.attach(added);
  }

  private changed(): void {
    this.state = stateOf(this.pages);
    for (const listener of [...this.listeners]) listener();
  }
}

/** Whether `result` asks to split its pinned page at a position strictly inside it (never a page that would split into itself). */
function splits(options: PaginationOptions, result: PaginationResult<unknown>): boolean {
  const { cursor, endCursor } = options;
  const { splitCursor, pageStatus } = result;
  if (endCursor === undefined || endCursor === null || pageStatus === undefined) return false;
  return typeof splitCursor === "string" && splitCursor !== cursor && splitCursor !== endCursor;
}

function newPage<Item>(options: PaginationOptions, standIn: StandIn<Item> | null): Page<Item> {
  return { options, result: null, standIn, error: null, unsubscribe: null };
}

function detach(page: Page<unknown>): void {
  const unsubscribe = page.unsubscribe;
  page.unsubscribe = null;
  unsubscribe?.();
}

function stateOf<Item>(pages: readonly Page<Item>[]): PaginatedState<Item> {
  const error = pages.find((page) => page.error !== null)?.error ?? null;
  const results: Item[] = [];
  let previous: StandIn<Item> | null = null;
  for (const page of pages) {
    const standIn = page.standIn;
    if (standIn !== null) {
      // The pages sharing a stand-in are next to each other: show it once, for all of them.
      if (standIn !== previous) results.push(...standIn.shown.page);
    } else if (page.result === null) {
      return { results, status: page === pages[0] ? "LoadingFirstPage" : "LoadingMore", error };
    } else {
      results.push(...page.result.page);
    }
    previous = standIn;
  }
  const last = pages[pages.length - 1]!;
  return { results, status: (last.standIn?.shown ?? last.result)!.isDone ? "Exhausted" : "CanLoadMore", error };
}
