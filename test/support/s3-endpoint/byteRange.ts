/**
 * The `Range` header of GetObject, as S3 reads it: one `bytes=` range (`a-b`, `a-`, `-n`).
 * A header S3 does not understand (several ranges, another unit, bad syntax) is ignored
 * and the whole object is served; a well-formed range outside the object is 416.
 */

export type ByteRange =
  | { readonly kind: "whole" }
  | { readonly kind: "part"; readonly start: number; readonly endInclusive: number }
  | { readonly kind: "unsatisfiable" };

export function parseByteRange(header: string | undefined, size: number): ByteRange {
  if (header === undefined) return { kind: "whole" };
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return { kind: "whole" };
  const [, firstText = "", lastText = ""] = match;
  if (firstText === "" && lastText === "") return { kind: "whole" };
  if (firstText === "") return suffixRange(Number(lastText), size);
  const start = Number(firstText);
  const requestedEnd = lastText === "" ? Number.POSITIVE_INFINITY : Number(lastText);
  if (requestedEnd < start) return { kind: "whole" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "part", start, endInclusive: Math.min(requestedEnd, size - 1) };
}

/** `-n`: the last n bytes (all of them when n exceeds the size). */
function suffixRange(length: number, size: number): ByteRange {
  if (length === 0 || size === 0) return { kind: "unsatisfiable" };
  return { kind: "part", start: Math.max(0, size - length), endInclusive: size - 1 };
}
