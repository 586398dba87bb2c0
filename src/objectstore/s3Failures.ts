import { CairnError, type ErrorCode, STORE_THROTTLED_BACKOFF_MIN_MS } from "../base/index.js";

/**
 * The one place where a failed S3 call becomes a CairnError.
 *
 * Invariants:
 * - Answers are classified by HTTP status (`$metadata.httpStatusCode`), never by the
 *   error's `name`: bodiless answers (HEAD, 304) arrive as "Unknown" or "NotFound". The
 *   XML code is consulted only to tell NoSuchBucket from NoSuchKey on a 404.
 * - A conditional write is a CAS_CONFLICT only on 412, 409 or a 404 answering If-Match;
 *   it is transient only on answers proving nothing was written (429: a throttle refuses
 *   before it acts) or when no connection was ever made. A 500, 502, 503 or 504 proves
 *   nothing: a gateway or a failing backend may answer it after the write landed (radosgw
 *   16 answers 500 to losers of racing If-Match PUTs), so it is STORE_AMBIGUOUS_OUTCOME,
 *   like every answer that may have reached the store without a readable reply: never
 *   success, never a conflict. The S3 adapter resolves those by reading the key back.
 * - Reads, deletes and lists are idempotent: every network failure is transient for them.
 */

/** What went wrong, as far as the wire tells. */
export type S3Failure =
  /** The store answered with this status (and, when the answer had a body, this XML code). */
  | { readonly kind: "status"; readonly status: number; readonly code: string | undefined }
  /** No connection was made, so the request cannot have reached the store. */
  | { readonly kind: "not-sent"; readonly reason: string }
  /** The connection broke or timed out after the request may have been sent. */
  | { readonly kind: "maybe-sent"; readonly reason: string }
  /** No credentials could be found (nothing was sent). */
  | { readonly kind: "no-credentials"; readonly reason: string }
  /** Anything else: an SDK or local failure Cairn does not know. */
  | { readonly kind: "unknown"; readonly reason: string };

/** How a call treats failures: a conditional write may not be repeated blindly. */
export type S3CallKind = "read" | "conditional-write" | "idempotent-write" | "bucket-check";

export interface S3Call {
  readonly operation: string;
  readonly kind: S3CallKind;
  readonly location: string;
  readonly key?: string;
}

/** The subset of an SDK error Cairn reads. */
interface S3ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly Code?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/** Connection-phase failures: the socket never connected, nothing was written. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);
/** Failures of an established connection: the request may have been (partly) received. */
const MAYBE_SENT_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_HTTP_REQUEST_TIMEOUT",
]);
/** The SDK's connect timeout names no code; its message is the only mark it leaves. */
const CONNECT_TIMEOUT_MESSAGE = /did not establish a connection/;
const TRANSIENT_STATUSES = new Set([429, 500, 502, 503, 504]);
/** Server failures: for a conditional write they say nothing about whether it landed. */
const SERVER_FAILURE_STATUSES = new Set([500, 502, 503, 504]);

export function classifyS3Failure(error: unknown): S3Failure {
  const shape = (typeof error === "object" && error !== null ? error : {}) as S3ErrorShape;
  const message = typeof shape.message === "string" ? shape.message : String(error);
  const status = shape.$metadata?.httpStatusCode;
  if (typeof status === "number") {
    const code = typeof shape.Code === "string" ? shape.Code : undefined;
    return { kind: "status", status, code };
  }
  const code = typeof shape.code === "string" ? shape.code : undefined;
  if ((code !== undefined && NOT_SENT_CODES.has(code)) || CONNECT_TIMEOUT_MESSAGE.test(message)) {
    return { kind: "not-sent", reason: code ?? message };
  }
  if ((code !== undefined && MAYBE_SENT_CODES.has(code)) || shape.name === "TimeoutError" || /socket hang up/i.test(message)) {
    return { kind: "maybe-sent", reason: code ?? message };
  }
  if (shape.name === "CredentialsProviderError") return { kind: "no-credentials", reason: message };
  return { kind: "unknown", reason: message };
}

/** The CairnError for `failure` of `call`; `error` becomes its cause. */
export function storeErrorFor(failure: S3Failure, call: S3Call, error: unknown): CairnError {
  const what = call.key === undefined ? `${call.operation} on ${call.location}` : `${call.operation} ${call.location}${call.key}`;
  const details = { operation: call.operation, key: call.key, failure };
  const make: MakeError = (code, message, extra = {}) =>
    new CairnError(code, message, { cause: error, details: { ...details, ...extra } });
  switch (failure.kind) {
    case "status":
      return statusError(failure, call, what, make);
    case "not-sent":
      return make("STORE_UNREACHABLE", `${what}: cannot connect to the store (${failure.reason})`);
    case "maybe-sent":
      if (call.kind === "conditional-write") {
        return make(
          "STORE_AMBIGUOUS_OUTCOME",
          `${what}: the connection failed after the request was sent (${failure.reason}); the write may or may not have happened — re-read to find out`,
        );
      }
      return make("STORE_TRANSIENT", `${what}: the connection failed (${failure.reason})`);
    case "no-credentials":
      return make(
        "STORE_ACCESS_DENIED",
        `${what}: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): ${failure.reason}`,
      );
    case "unknown":
      if (call.kind === "conditional-write") {
        return make("STORE_AMBIGUOUS_OUTCOME", `${what}: failed in an unexpected way (${failure.reason}); the write may have happened`);
      }
      return make("STORE_REQUEST_FAILED", `${what}: ${failure.reason}`);
  }
}

/** The HTTP status behind an error made by storeErrorFor, when the store answered one. */
export function answeredStatusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const failure = (error as { details?: { failure?: Partial<S3Failure> & { status?: unknown } } }).details?.failure;
  return failure?.kind === "status" && typeof failure.status === "number" ? failure.status : undefined;
}

type MakeError = (code: ErrorCode, message: string, extra?: object) => CairnError;

function statusError(failure: S3Failure & { kind: "status" }, call: S3Call, what: string, make: MakeError): CairnError {
  const { status, code } = failure;
  const answer = `HTTP ${status}${code === undefined ? "" : ` ${code}`}`;
  if (call.kind === "conditional-write" && (status === 412 || status === 409 || (status === 404 && code !== "NoSuchBucket"))) {
    return make("CAS_CONFLICT", `${what}: conditional write lost (${answer})`);
  }
  if (status === 404 && (code === "NoSuchBucket" || call.kind === "bucket-check")) {
    return make("STORE_BUCKET_MISSING", `${what}: the bucket does not exist (${answer})`);
  }
  if (status === 403) {
    return make("STORE_ACCESS_DENIED", `${what}: access denied — wrong credentials or no permission (${answer})`);
  }
  if (status === 301) {
    return make("STORE_URL_INVALID", `${what}: the bucket is in another region; set region=… in the store URL (${answer})`);
  }
  if (call.kind === "conditional-write" && SERVER_FAILURE_STATUSES.has(status)) {
    return make(
      "STORE_AMBIGUOUS_OUTCOME",
      `${what}: the store failed (${answer}), which does not prove the write did not happen — re-read to find out`,
    );
  }
  if (TRANSIENT_STATUSES.has(status)) {
    const extra = status === 429 ? { retryAfterMs: STORE_THROTTLED_BACKOFF_MIN_MS } : {};
    return make("STORE_TRANSIENT", `${what}: the store is busy or failing (${answer})`, extra);
  }
  if (status >= 200 && status < 300) {
    // The store accepted the request but its answer could not be used.
    if (call.kind === "conditional-write") {
      return make("STORE_AMBIGUOUS_OUTCOME", `${what}: the answer (${answer}) was unreadable; the write may have happened`);
    }
    return make("STORE_TRANSIENT", `${what}: the answer (${answer}) was unreadable`);
  }
  return make("STORE_REQUEST_FAILED", `${what}: unexpected answer ${answer}`);
}
