/**
 * Scenario: failed SDK calls, shaped as @aws-sdk/client-s3 3.x throws them (S3.md §3),
 * become exactly one CairnError each. The S3 tests drive most answers over real HTTP;
 * this table covers the rest (a 301, an unreadable 2xx, no credentials, unknown local
 * failures) and pins the rule that a conditional write is never reported as success or
 * conflict when its outcome is unknown — a 5xx included, since a gateway's 5xx does not
 * prove that the write did not land.
 */
import { describe, expect, it } from "vitest";
import { classifyS3Failure, storeErrorFor, type S3CallKind } from "../../src/objectstore/s3Failures.js";

function sdkError(status: number, name: string, code?: string): Error {
  return Object.assign(new Error(`${name} message`), {
    name,
    $fault: status >= 500 ? "server" : "client",
    $metadata: { httpStatusCode: status, attempts: 1, totalRetryDelay: 0 },
    ...(code === undefined ? {} : { Code: code }),
  });
}

function networkError(code: string, message = `connect ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

function codeFor(error: unknown, kind: S3CallKind): string {
  return storeErrorFor(classifyS3Failure(error), { operation: "Op", kind, location: "s3://b/", key: "k" }, error).code;
}

describe("S3 failure classification", () => {
  it.each([
    [sdkError(412, "PreconditionFailed", "PreconditionFailed"), "conditional-write", "CAS_CONFLICT"],
    [sdkError(409, "ConditionalRequestConflict", "ConditionalRequestConflict"), "conditional-write", "CAS_CONFLICT"],
    [sdkError(404, "NoSuchKey", "NoSuchKey"), "conditional-write", "CAS_CONFLICT"],
    [sdkError(404, "NoSuchBucket", "NoSuchBucket"), "conditional-write", "STORE_BUCKET_MISSING"],
    [sdkError(404, "NotFound"), "bucket-check", "STORE_BUCKET_MISSING"],
    [sdkError(403, "Unknown"), "bucket-check", "STORE_ACCESS_DENIED"],
    [sdkError(403, "SignatureDoesNotMatch", "SignatureDoesNotMatch"), "conditional-write", "STORE_ACCESS_DENIED"],
    [sdkError(301, "PermanentRedirect", "PermanentRedirect"), "read", "STORE_URL_INVALID"],
    [sdkError(429, "TooManyRequests", "TooManyRequests"), "conditional-write", "STORE_TRANSIENT"],
    // A 5xx does not prove a conditional write did not land; a 429 refuses before acting.
    [sdkError(500, "InternalError", "InternalError"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(500, "UnknownError", "UnknownError"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(502, "Unknown"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(503, "SlowDown", "SlowDown"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(504, "Unknown"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(500, "InternalError", "InternalError"), "read", "STORE_TRANSIENT"],
    [sdkError(503, "SlowDown", "SlowDown"), "idempotent-write", "STORE_TRANSIENT"],
    [sdkError(504, "Unknown"), "read", "STORE_TRANSIENT"],
    [sdkError(501, "NotImplemented", "NotImplemented"), "conditional-write", "STORE_REQUEST_FAILED"],
    [sdkError(412, "PreconditionFailed", "PreconditionFailed"), "read", "STORE_REQUEST_FAILED"],
    [sdkError(200, "Error"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [sdkError(200, "Error"), "read", "STORE_TRANSIENT"],
    [networkError("ECONNREFUSED"), "conditional-write", "STORE_UNREACHABLE"],
    [networkError("ENOTFOUND"), "read", "STORE_UNREACHABLE"],
    [
      Object.assign(new Error("the request socket did not establish a connection with the server within 2000 ms"), {
        name: "TimeoutError",
      }),
      "conditional-write",
      "STORE_UNREACHABLE",
    ],
    [Object.assign(networkError("ECONNRESET", "socket hang up"), { name: "TimeoutError" }), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [networkError("EPIPE"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [networkError("ECONNRESET"), "read", "STORE_TRANSIENT"],
    [Object.assign(new Error("Could not load credentials"), { name: "CredentialsProviderError" }), "read", "STORE_ACCESS_DENIED"],
    [new Error("something unforeseen"), "conditional-write", "STORE_AMBIGUOUS_OUTCOME"],
    [new Error("something unforeseen"), "read", "STORE_REQUEST_FAILED"],
  ] as const)("%s during a %s call → %s", (error, kind, code) => {
    expect(codeFor(error, kind)).toBe(code);
  });

  it("asks for at least a second's wait after a 429", () => {
    const error = sdkError(429, "TooManyRequests", "TooManyRequests");
    const stored = storeErrorFor(classifyS3Failure(error), { operation: "PutObject", kind: "conditional-write", location: "s3://b/" }, error);
    expect(stored.details).toMatchObject({ retryAfterMs: 1_000 });
  });
});
