import { createHash } from "node:crypto";

/**
 * ETags as S3 computes and compares them. A plain PutObject's etag is the lowercase hex
 * MD5 of the body; it is sent quoted, and compared with quotes (and a weak `W/` prefix)
 * stripped on both sides (S3.md §1).
 */

/** The unquoted etag of a body. */
export function etagOf(body: Uint8Array): string {
  return createHash("md5").update(body).digest("hex");
}

export function quoteEtag(etag: string): string {
  return `"${etag}"`;
}

/** `*` or the etags of an `If-Match` / `If-None-Match` value, unquoted. */
export type EtagCondition = { readonly any: true } | { readonly any: false; readonly etags: readonly string[] };

export function parseEtagCondition(headerValue: string): EtagCondition {
  const trimmed = headerValue.trim();
  if (trimmed === "*") return { any: true };
  const etags = trimmed
    .split(",")
    .map((part) => unquoteEtag(part))
    .filter((etag) => etag !== "");
  return { any: false, etags };
}

export function conditionMatches(condition: EtagCondition, etag: string): boolean {
  return condition.any || condition.etags.includes(etag);
}

function unquoteEtag(text: string): string {
  let value = text.trim();
  if (value.startsWith("W/")) value = value.slice(2);
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  return value;
}
