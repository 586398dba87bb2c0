import type { z } from "zod";
import { v } from "./values.js";

/**
 * The validator of what `paginate` returns, for a paginated query's `returns`:
 * `returns: paginationResultValidator(itemValidator)`. It accepts the `splitCursor` and
 * `pageStatus` a pinned page that grew comes back with (a hand-written `v.object` of
 * `page`, `isDone` and `continueCursor` alone would refuse that answer and fail the query
 * exactly when the page needs splitting).
 */
export function paginationResultValidator<Item extends z.ZodType>(item: Item) {
  return v.object({
    page: v.array(item),
    isDone: v.boolean(),
    continueCursor: v.string(),
    splitCursor: v.optional(v.string()),
    pageStatus: v.optional(v.union(v.literal("SplitRecommended"), v.literal("SplitRequired"))),
  });
}
