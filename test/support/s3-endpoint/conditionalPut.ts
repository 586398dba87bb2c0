import type { StoredObject } from "./buckets.js";
import { conditionMatches, parseEtagCondition } from "./etags.js";
import type { S3EndpointMode } from "./operations.js";
import { S3Error, noSuchKey, notImplemented, preconditionFailed } from "./S3Error.js";

/**
 * The decision of a conditional PutObject, exactly the table of S3.md §1, per mode (and,
 * for radosgw, the behaviour checked against radosgw 16.2.15). Pure: it sees the current
 * object and returns whether the write may happen; the caller applies it in the same
 * synchronous step so that no other write can land in between.
 */

export interface PutConditions {
  /** Raw `If-Match` header value. */
  readonly ifMatch: string | undefined;
  /** Raw `If-None-Match` header value. */
  readonly ifNoneMatch: string | undefined;
}

export function isConditionalPut(conditions: PutConditions): boolean {
  return conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined;
}

/** Returns undefined when the write may happen, else the error to answer. */
export function refusePut(
  mode: S3EndpointMode,
  conditions: PutConditions,
  current: StoredObject | undefined,
  key: string,
): S3Error | undefined {
  if (mode === "aws") {
    const unsupported = unsupportedOnAws(conditions);
    if (unsupported !== undefined) return unsupported;
  }
  if (mode === "radosgw") return refuseAsRadosgw(conditions, current);
  if (conditions.ifMatch !== undefined) {
    const refusal = refuseIfMatch(mode, conditions.ifMatch, current, key);
    if (refusal !== undefined) return refusal;
  }
  if (conditions.ifNoneMatch !== undefined && current !== undefined) {
    if (conditionMatches(parseEtagCondition(conditions.ifNoneMatch), current.etag)) {
      return preconditionFailed("If-None-Match");
    }
  }
  return undefined;
}

/** AWS implements only `If-None-Match: *` and `If-Match: <etag>`, one at a time. */
function unsupportedOnAws(conditions: PutConditions): S3Error | undefined {
  const message = "A header you provided implies functionality that is not implemented";
  if (conditions.ifMatch !== undefined && conditions.ifNoneMatch !== undefined) {
    return notImplemented(message, "If-Match");
  }
  if (conditions.ifNoneMatch !== undefined && conditions.ifNoneMatch.trim() !== "*") {
    return notImplemented(message, "If-None-Match");
  }
  if (conditions.ifMatch !== undefined && conditions.ifMatch.trim() === "*") {
    return notImplemented(message, "If-Match");
  }
  return undefined;
}

function refuseIfMatch(
  mode: S3EndpointMode,
  ifMatch: string,
  current: StoredObject | undefined,
  key: string,
): S3Error | undefined {
  if (current === undefined) {
    switch (mode) {
      case "aws":
        return noSuchKey(key);
      case "r2":
        return preconditionFailed("If-Match");
      case "legacy-minio":
        // The old MinIO bug: a CAS against nothing "succeeds" and creates the key.
        return undefined;
      case "radosgw":
        return preconditionFailed(undefined);
    }
  }
  return conditionMatches(parseEtagCondition(ifMatch), current.etag) ? undefined : preconditionFailed("If-Match");
}

/**
 * radosgw 16.2: `*` means "exists"; any other value is compared with the stored etag as
 * it is, quotes included; If-Match on a missing key fails; a 412 names no condition.
 */
function refuseAsRadosgw(conditions: PutConditions, current: StoredObject | undefined): S3Error | undefined {
  const { ifMatch, ifNoneMatch } = conditions;
  if (ifMatch !== undefined) {
    if (current === undefined) return preconditionFailed(undefined);
    if (ifMatch.trim() !== "*" && !radosgwEtagMatches(ifMatch, current.etag)) return preconditionFailed(undefined);
  }
  if (ifNoneMatch !== undefined && current !== undefined) {
    if (ifNoneMatch.trim() === "*" || radosgwEtagMatches(ifNoneMatch, current.etag)) return preconditionFailed(undefined);
  }
  return undefined;
}

/**
 * radosgw's comparison: leading blanks skipped, then `strncmp(header, etag, etag.length)`.
 * So `"<etag>"` never matches (its first character is a quote) and `<etag>` does (as does
 * `<etag>` followed by anything, which Cairn never sends).
 */
function radosgwEtagMatches(header: string, storedEtag: string): boolean {
  return header.replace(/^[ \t]+/, "").startsWith(storedEtag);
}
