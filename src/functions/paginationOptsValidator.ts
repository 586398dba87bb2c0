import { v } from "./values.js";

/**
 * The validator of a paginated query's `paginationOpts` argument, the options
 * `paginate` takes: `args: { paginationOpts: paginationOptsValidator, … }`, then
 * `.paginate(paginationOpts)`. It accepts `endCursor`, which usePaginatedQuery (cairn/react)
 * sends to pin the pages it has loaded (and the halves of a page it splits);
 * `numItems` and the cursors are checked by `paginate` itself.
 */
export const paginationOptsValidator = v.object({
  cursor: v.union(v.string(), v.null()),
  numItems: v.number(),
  endCursor: v.optional(v.union(v.string(), v.null())),
});
