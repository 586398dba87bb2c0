import type { CairnError } from "../base/index.js";
import { compareValues } from "../model/compareValues.js";
import type { Value } from "../model/Value.js";

/** A query's result as a listener sees it: a value, or the error the query failed with. */
export type QueryResult =
  | { readonly kind: "value"; readonly value: Value }
  | { readonly kind: "error"; readonly error: CairnError };

/**
 * Whether a listener that saw `seen` would see nothing new in `next`. Values compare by
 * content (an equal value re-sent by the server or re-made by an optimistic update is
 * no change); errors by code and message.
 */
export function sameResult(seen: QueryResult | undefined, next: QueryResult): boolean {
  if (seen === undefined) return false;
  if (seen === next) return true;
  switch (next.kind) {
    case "value":
      return seen.kind === "value" && sameValue(seen.value, next.value);
    case "error":
      return seen.kind === "error" && seen.error.code === next.error.code && seen.error.message === next.error.message;
  }
}

function sameValue(left: Value, right: Value): boolean {
  if (left === right) return true;
  try {
    return compareValues(left, right) === 0;
  } catch {
    // An optimistic update may set something that is not a value; count it as a change.
    return false;
  }
}
