import type { CairnError } from "../client/index.js";

/**
 * A query as a component sees it:
 *
 *   skipped   the caller passed "skip": nothing is subscribed
 *   loading   subscribed, no result yet (or the arguments just changed)
 *   success   the latest result, optimistic updates applied
 *   error     the query failed (it throws, or the arguments were refused); a later
 *             result replaces the error when the data it read changes
 */
export type QueryState<Result> =
  | { readonly status: "skipped" }
  | { readonly status: "loading" }
  | { readonly status: "success"; readonly value: Result }
  | { readonly status: "error"; readonly error: CairnError };

export const SKIPPED: QueryState<never> = Object.freeze({ status: "skipped" });
export const LOADING: QueryState<never> = Object.freeze({ status: "loading" });
