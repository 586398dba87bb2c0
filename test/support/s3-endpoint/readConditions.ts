import type { StoredObject } from "./buckets.js";
import { conditionMatches, parseEtagCondition } from "./etags.js";

/**
 * Conditional GET/HEAD in the order of RFC 9110 §13.2.2, which S3 follows: If-Match, else
 * If-Unmodified-Since (412 when false); then If-None-Match, else If-Modified-Since (304
 * when false). Dates compare at whole seconds, the precision of Last-Modified.
 */

export interface ReadConditions {
  readonly ifMatch: string | undefined;
  readonly ifNoneMatch: string | undefined;
  readonly ifModifiedSince: string | undefined;
  readonly ifUnmodifiedSince: string | undefined;
}

export type ReadConditionOutcome =
  | { readonly kind: "proceed" }
  | { readonly kind: "not-modified" }
  | { readonly kind: "precondition-failed"; readonly condition: "If-Match" | "If-Unmodified-Since" };

export function evaluateReadConditions(conditions: ReadConditions, object: StoredObject): ReadConditionOutcome {
  const modifiedSecond = Math.floor(object.lastModifiedMs / 1000);
  if (conditions.ifMatch !== undefined) {
    if (!conditionMatches(parseEtagCondition(conditions.ifMatch), object.etag)) {
      return { kind: "precondition-failed", condition: "If-Match" };
    }
  } else {
    const unmodifiedSince = httpDateSecond(conditions.ifUnmodifiedSince);
    if (unmodifiedSince !== undefined && modifiedSecond > unmodifiedSince) {
      return { kind: "precondition-failed", condition: "If-Unmodified-Since" };
    }
  }
  if (conditions.ifNoneMatch !== undefined) {
    if (conditionMatches(parseEtagCondition(conditions.ifNoneMatch), object.etag)) return { kind: "not-modified" };
  } else {
    const modifiedSince = httpDateSecond(conditions.ifModifiedSince);
    if (modifiedSince !== undefined && modifiedSecond <= modifiedSince) return { kind: "not-modified" };
  }
  return { kind: "proceed" };
}

/** Seconds since the epoch of an HTTP date, or undefined when absent or unparseable (ignored, as S3 does). */
function httpDateSecond(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}
