import { useMemo, useSyncExternalStore } from "react";
import type { ArgsOf, CairnError, FunctionReference, ResultOf } from "../client/index.js";
import type { PaginationOptions, PaginationResult } from "../functions/index.js";
import { argsKey } from "./argsKey.js";
import { useCairnClient } from "./CairnProvider.js";
import { PaginatedPages, type PaginatedState, type PaginationStatus } from "./PaginatedPages.js";

/**
 * A query that returns one page: it takes `paginationOpts` (declare it with
 * `paginationOptsValidator`, which accepts the `endCursor` this hook sends) and returns
 * `.paginate(paginationOpts)`'s result.
 */
export type PaginatedQueryReference = FunctionReference<"query", { paginationOpts: PaginationOptions }, PaginationResult<any>>;

/** The arguments of a paginated query without `paginationOpts`, which the hook supplies. */
export type PaginatedQueryArgs<Ref extends PaginatedQueryReference> = Omit<ArgsOf<Ref>, "paginationOpts">;

export type PaginatedQueryItem<Ref extends PaginatedQueryReference> = ResultOf<Ref> extends PaginationResult<infer Item> ? Item : never;

/** A query whose `paginationOpts` has no `endCursor` compiles to this message instead of its arguments. */
interface NeedsEndCursor {
  readonly "paginationOpts must accept endCursor: declare it with paginationOptsValidator": never;
}

export interface UsePaginatedQueryResult<Item> {
  /** Every loaded row, in the query's order. */
  readonly results: readonly Item[];
  readonly status: PaginationStatus;
  /** Whether a page is loading (LoadingFirstPage or LoadingMore). */
  readonly isLoading: boolean;
  /** Loads `numItems` more rows after the loaded ones (only while CanLoadMore; otherwise does nothing). */
  readonly loadMore: (numItems: number) => void;
}

const SKIPPED: PaginatedState<never> = Object.freeze({ results: [], status: "LoadingFirstPage", error: null });
const skippedStore = { subscribe: () => () => {}, getSnapshot: () => SKIPPED, loadMore: () => false };

/**
 * The loaded pages of a paginated query, live, as one list. Pages stay live and gapless
 * under concurrent writes: a row inserted anywhere among the loaded rows appears there
 * (the page holding it grows; one grown past 2 × its numItems is split in two, out of
 * sight), a row deleted disappears, and no row is shown twice (PaginatedPages says how). `args` ("skip": nothing) without `paginationOpts`; when
 * they change by content, the pages start over. A failed page throws its CairnError
 * during render, for the nearest error boundary.
 *
 *   const { results, status, loadMore } = usePaginatedQuery(api.messages.page, { channel }, { initialNumItems: 20 });
 */
export function usePaginatedQuery<Ref extends PaginatedQueryReference>(
  ref: Ref,
  args: "endCursor" extends keyof ArgsOf<Ref>["paginationOpts"] ? PaginatedQueryArgs<Ref> | "skip" : NeedsEndCursor,
  options: { readonly initialNumItems: number },
): UsePaginatedQueryResult<PaginatedQueryItem<Ref>> {
  const client = useCairnClient();
  const key = args === "skip" ? null : argsKey(args);
  const { initialNumItems } = options;
  // The key stands for `args`: a new object with equal content keeps the pages.
  const store = useMemo(() => {
    if (args === "skip") return skippedStore;
    return new PaginatedPages<PaginatedQueryItem<Ref>>((paginationOpts, onResult, onError) => {
      try {
        return client.subscribe(ref, { ...(args as object), paginationOpts } as ArgsOf<Ref>, (result) => onResult(result as PaginationResult<PaginatedQueryItem<Ref>>), onError);
      } catch (error) {
        // Arguments the client refuses, or a closed client: CairnErrors, shown as the query's error.
        onError(error as CairnError);
        return () => {};
      }
    }, initialNumItems);
  }, [client, ref.path, key, initialNumItems]);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
  const result = useMemo(
    () => ({
      results: state.results,
      status: state.status,
      isLoading: state.status === "LoadingFirstPage" || state.status === "LoadingMore",
      loadMore: (numItems: number) => void store.loadMore(numItems),
    }),
    [state, store],
  );
  if (state.error !== null) throw state.error;
  return result;
}
