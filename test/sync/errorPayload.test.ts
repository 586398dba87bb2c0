/**
 * Scenario: errors on their way to a client. One of kind Internal (a bug: an assertion,
 * a failed store request, anything that is not a CairnError) reaches the client as its
 * code and a generic message only — paths, keys and stack text stay in the server's log;
 * every other kind keeps its message, which tells the caller what to fix.
 */
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/index.js";
import { errorPayload, INTERNAL_ERROR_MESSAGE, isInternalError } from "../../src/sync/index.js";

describe("errorPayload", () => {
  it("keeps an Internal error's message on the server", () => {
    const bug = new CairnError("INTERNAL", "assertion failed: segment 7 of /var/lib/cairn/shard-0 offered at 9", { details: { shard: 0 } });
    expect(errorPayload(bug)).toEqual({ code: "INTERNAL", kind: "Internal", message: INTERNAL_ERROR_MESSAGE, details: { shard: 0 } });
    expect(errorPayload(new CairnError("STORE_REQUEST_FAILED", "GET s3://bucket/secret-key failed"))).toMatchObject({ kind: "Internal", message: INTERNAL_ERROR_MESSAGE });
    expect(errorPayload(new TypeError("Cannot read properties of undefined (reading 'x')"))).toEqual({ code: "INTERNAL", kind: "Internal", message: INTERNAL_ERROR_MESSAGE });
    expect(isInternalError(bug)).toBe(true);
    expect(isInternalError(new RangeError("x"))).toBe(true);
  });

  it("keeps the message of every other kind", () => {
    const refused = new CairnError("SESSION_LIMIT_EXCEEDED", "a session subscribes to at most 1000 queries");
    expect(errorPayload(refused)).toEqual({ code: "SESSION_LIMIT_EXCEEDED", kind: "InvalidInput", message: "a session subscribes to at most 1000 queries" });
    expect(isInternalError(refused)).toBe(false);
  });
});
