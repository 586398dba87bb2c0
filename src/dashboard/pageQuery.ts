import type { IndexInfo, WireValue } from "./adminTypes.js";
import { parseJsonText } from "./wireValue.js";

/**
 * What `_system:page` is asked, apart from the page: an index, an order, equality on a
 * prefix of the index's fields and bounds on the next one (docs/admin-api.md).
 */
export interface PageQuery {
  readonly index: string;
  readonly order: "asc" | "desc";
  readonly eq: readonly WireValue[];
  readonly lower: { readonly value: WireValue; readonly inclusive: boolean } | null;
  readonly upper: { readonly value: WireValue; readonly inclusive: boolean } | null;
}

/** The filter as typed: one JSON text per field for equality, and the bounds' texts. */
export interface FilterDraft {
  readonly index: string;
  readonly order: "asc" | "desc";
  readonly eqTexts: readonly string[];
  readonly lowerText: string;
  readonly lowerInclusive: boolean;
  readonly upperText: string;
  readonly upperInclusive: boolean;
}

export const DEFAULT_INDEX = "by_creation";

export function emptyDraft(index: string, order: "asc" | "desc" = "asc"): FilterDraft {
  return { index, order, eqTexts: [], lowerText: "", lowerInclusive: true, upperText: "", upperInclusive: false };
}

/** The number of leading fields with an equality value typed (the prefix). */
export function prefixLength(draft: FilterDraft): number {
  let length = 0;
  while (length < draft.eqTexts.length && draft.eqTexts[length]!.trim() !== "") length++;
  return length;
}

/** The query the draft stands for; an Error saying what is wrong (bad JSON, a gap in the prefix, bounds past the last field). */
export function pageQueryOf(draft: FilterDraft, index: IndexInfo | undefined): PageQuery {
  const fields = index?.fields ?? [];
  const length = prefixLength(draft);
  const gap = draft.eqTexts.findIndex((text, position) => position > length && text.trim() !== "");
  if (gap !== -1) throw new Error(`equality must be on a prefix of the index's fields: ${fields[gap] ?? `field ${gap + 1}`} is set but ${fields[length] ?? `field ${length + 1}`} is not`);
  const eq = draft.eqTexts.slice(0, length).map((text, position) => parseJsonText(text, `the value for ${fields[position] ?? "a field"}`));
  const hasBounds = draft.lowerText.trim() !== "" || draft.upperText.trim() !== "";
  if (hasBounds && length >= fields.length && index !== undefined) throw new Error(`every field of ${index.name} has a value: there is no next field to bound`);
  const boundField = fields[length] ?? "the next field";
  const bound = (text: string, inclusive: boolean, which: string) =>
    text.trim() === "" ? null : { value: parseJsonText(text, `the ${which} bound on ${boundField}`), inclusive };
  return {
    index: draft.index,
    order: draft.order,
    eq,
    lower: bound(draft.lowerText, draft.lowerInclusive, "lower"),
    upper: bound(draft.upperText, draft.upperInclusive, "upper"),
  };
}

/** `_system:page`'s arguments for one page (`cursor` null: the first). */
export function pageArgs(table: string, query: PageQuery, numItems: number, cursor: string | null): WireValue {
  return {
    table,
    index: query.index,
    order: query.order,
    ...(query.eq.length > 0 ? { eq: [...query.eq] } : {}),
    ...(query.lower !== null ? { lower: { value: query.lower.value, inclusive: query.lower.inclusive } } : {}),
    ...(query.upper !== null ? { upper: { value: query.upper.value, inclusive: query.upper.inclusive } } : {}),
    paginationOpts: { numItems, cursor },
  };
}
