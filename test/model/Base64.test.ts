/**
 * Scenario: bytes inside values travel as base64. The encoder agrees with Node's Buffer
 * for every length; the decoder inverts it and refuses every other spelling (missing
 * padding, whitespace, URL-safe digits, non-zero unused bits), so each byte string has
 * exactly one text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBase64, encodeBase64 } from "../../src/model/Base64.js";

describe("base64", () => {
  it("agrees with Buffer and round-trips for random bytes of every length", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = encodeBase64(bytes);
        expect(text).toBe(Buffer.from(bytes).toString("base64"));
        expect(Buffer.from(decodeBase64(text)!).equals(bytes)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("refuses every non-canonical spelling", () => {
    const texts = ["A", "AA", "AAA", "AB==", "AAB=", "A===", "====", "AA=A", "=AAA", "AA==AAAA", " AAA", "AA-_", "AAAA\n", "ÀAAA"];
    for (const text of texts) {
      expect(decodeBase64(text), text).toBeNull();
    }
  });

  it("decodes only texts that encode back to themselves", () => {
    const digit = fc.constantFrom(..."AQgw/+=Bz9");
    fc.assert(
      fc.property(fc.array(digit, { maxLength: 12 }), (digits) => {
        const text = digits.join("");
        const bytes = decodeBase64(text);
        if (bytes !== null) expect(encodeBase64(bytes)).toBe(text);
      }),
      { numRuns: 5000 },
    );
  });
});
