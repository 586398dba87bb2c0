/**
 * Scenario: close reasons built from client text (a validation message echoing a
 * multi-byte string) are cut to the WebSocket bound of 123 UTF-8 bytes, never in the
 * middle of a character; short reasons pass unchanged.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CLOSE_REASON_BYTES_MAX, closeReason } from "../../src/sync/closeReason.js";

const bytesOf = (text: string) => Buffer.byteLength(text, "utf8");

describe("closeReason", () => {
  it("keeps a short reason as it is", () => {
    expect(closeReason("unresponsive")).toBe("unresponsive");
    expect(closeReason("")).toBe("");
  });

  it("cuts multi-byte text by bytes at a character boundary", () => {
    const reason = closeReason(`invalid frame: ${"€".repeat(100)}`);
    expect(bytesOf(reason)).toBeLessThanOrEqual(CLOSE_REASON_BYTES_MAX);
    expect(reason.endsWith("€")).toBe(true);
    const emoji = closeReason("😀".repeat(40));
    expect(bytesOf(emoji)).toBe(120);
    expect(emoji).toBe("😀".repeat(30));
  });

  it("is at most 123 bytes and a prefix of the reason, for any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), fc.string({ unit: "binary", maxLength: 200 }), (graphemes, binary) => {
        for (const text of [graphemes, binary, graphemes + binary]) {
          const reason = closeReason(text);
          expect(bytesOf(reason)).toBeLessThanOrEqual(CLOSE_REASON_BYTES_MAX);
          expect(text.startsWith(reason)).toBe(true);
          if (bytesOf(text) <= CLOSE_REASON_BYTES_MAX) expect(reason).toBe(text);
          // Never half of a surrogate pair the text had whole.
          const last = reason.charCodeAt(reason.length - 1);
          if (reason.length < text.length && last >= 0xd800 && last <= 0xdbff) expect(text.charCodeAt(reason.length)).not.toSatisfy((c: number) => c >= 0xdc00 && c <= 0xdfff);
        }
      }),
      { numRuns: 500 },
    );
  });
});
