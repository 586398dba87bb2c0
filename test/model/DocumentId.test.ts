/**
 * Scenario: document ids are minted from a seeded Random, shown to users, typed back and
 * parsed. Every minted id parses back to its table and random bytes; every single-
 * character typo, transposition, truncation or extension is caught; an id of another
 * table is refused with its own code; and spellings that would give one id two texts
 * (non-zero padding bits, a non-minimal table varint, look-alike characters) are refused.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import {
  TABLE_NUMBER_MAX,
  documentIdOfTable,
  encodeDocumentId,
  isDocumentId,
  newDocumentId,
  parseDocumentId,
  routeOfId,
} from "../../src/model/DocumentId.js";
import { codeOf } from "../support/errorCode.js";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const TABLES = [0, 1, 127, 128, 300, 16_383, 16_384, 2 ** 21, 2 ** 28, TABLE_NUMBER_MAX];

/** Base32 with the id alphabet, written independently of the module under test. */
function base32(bytes: readonly number[]): string {
  const bits = bytes.map((byte) => byte.toString(2).padStart(8, "0")).join("");
  const padded = bits.padEnd(Math.ceil(bits.length / 5) * 5, "0");
  const digits = padded.match(/.{5}/g) ?? [];
  return digits.map((digit) => ALPHABET[parseInt(digit, 2)]).join("");
}

function fletcher16(bytes: readonly number[]): number[] {
  let [sum1, sum2] = [0, 0];
  for (const byte of bytes) {
    sum1 = (sum1 + byte) % 255;
    sum2 = (sum2 + sum1) % 255;
  }
  return [sum1, sum2];
}

describe("document ids", () => {
  const random = new SeededRandom(42);

  it("round-trip table number and random bytes for tables of every varint length", () => {
    for (const table of TABLES) {
      for (let round = 0; round < 50; round++) {
        const id = newDocumentId(table, random);
        expect(id).toMatch(/^[0-9a-hjkmnp-tv-z]+$/);
        const parsed = parseDocumentId(id);
        expect(parsed.tableNumber).toBe(table);
        expect(encodeDocumentId(parsed)).toBe(id);
        expect(documentIdOfTable(id, table)).toBe(id);
        expect(isDocumentId(id)).toBe(true);
      }
    }
  });

  it("match an independent rendering of the documented layout", () => {
    const bytes = Array.from({ length: 16 }, (_, index) => index * 17);
    const body = [0xac, 0x02, ...bytes]; // varint(300)
    const expected = base32([...body, ...fletcher16(body)]);
    expect(encodeDocumentId({ tableNumber: 300, random: Uint8Array.from(bytes) })).toBe(expected);
  });

  it("are minted deterministically from a seeded Random", () => {
    expect(newDocumentId(5, new SeededRandom(1))).toBe(newDocumentId(5, new SeededRandom(1)));
    expect(newDocumentId(5, new SeededRandom(1))).not.toBe(newDocumentId(5, new SeededRandom(2)));
  });

  it("catch every single-character typo", () => {
    let typos = 0;
    for (const table of TABLES) {
      const id = newDocumentId(table, random);
      for (let position = 0; position < id.length; position++) {
        for (const char of ALPHABET) {
          if (char === id[position]) continue;
          const typo = id.slice(0, position) + char + id.slice(position + 1);
          expect(codeOf(() => parseDocumentId(typo)), typo).toBe("DOCUMENT_ID_INVALID");
          typos++;
        }
      }
    }
    expect(typos).toBeGreaterThan(3000);
  });

  it("catch swapped neighbours, dropped and added characters", () => {
    for (let round = 0; round < 200; round++) {
      const id = newDocumentId(round, random);
      for (let position = 0; position + 1 < id.length; position++) {
        if (id[position] === id[position + 1]) continue;
        const swapped = id.slice(0, position) + id[position + 1] + id[position] + id.slice(position + 2);
        expect(codeOf(() => parseDocumentId(swapped)), swapped).toBe("DOCUMENT_ID_INVALID");
      }
      expect(codeOf(() => parseDocumentId(id.slice(0, -1)))).toBe("DOCUMENT_ID_INVALID");
      expect(codeOf(() => parseDocumentId(id.slice(1)))).toBe("DOCUMENT_ID_INVALID");
      expect(codeOf(() => parseDocumentId(`${id}0`))).toBe("DOCUMENT_ID_INVALID");
    }
  });

  it("refuse an id of another table with DOCUMENT_ID_WRONG_TABLE", () => {
    const id = newDocumentId(7, random);
    expect(codeOf(() => documentIdOfTable(id, 8))).toBe("DOCUMENT_ID_WRONG_TABLE");
    expect(codeOf(() => documentIdOfTable("garbage", 7))).toBe("DOCUMENT_ID_INVALID");
  });

  it("accept ASCII upper case and return the canonical lower-case form", () => {
    const id = newDocumentId(12, random);
    const upper = id.toUpperCase();
    expect(parseDocumentId(upper).tableNumber).toBe(12);
    expect(documentIdOfTable(upper, 12)).toBe(id);
    expect(isDocumentId(upper)).toBe(false);
  });

  it("refuse non-canonical spellings", () => {
    const random16 = Array.from({ length: 16 }, (_, index) => index + 1);
    // Table 5 written as a two-byte varint (0x85 0x00): decodes to the same number.
    const longVarint = [0x85, 0x00, ...random16];
    expect(codeOf(() => parseDocumentId(base32([...longVarint, ...fletcher16(longVarint)])))).toBe("DOCUMENT_ID_INVALID");
    // Non-zero padding bits in the last character: same bytes, different text.
    const id = encodeDocumentId({ tableNumber: 5, random: Uint8Array.from(random16) });
    const lastDigit = ALPHABET.indexOf(id[id.length - 1]!);
    const padded = id.slice(0, -1) + ALPHABET[lastDigit | 1];
    expect(padded).not.toBe(id);
    expect(codeOf(() => parseDocumentId(padded))).toBe("DOCUMENT_ID_INVALID");
    // Crockford's look-alike aliases and non-ASCII case folds are not accepted.
    for (const [from, to] of [["0", "o"], ["1", "i"], ["1", "l"], ["k", "\u212a"]] as const) {
      const withAlias = id.includes(from) ? id.replace(from, to) : null;
      if (withAlias !== null) expect(codeOf(() => parseDocumentId(withAlias)), withAlias).toBe("DOCUMENT_ID_INVALID");
    }
    expect(codeOf(() => parseDocumentId(`${id.slice(0, 5)}\u212a${id.slice(6)}`))).toBe("DOCUMENT_ID_INVALID");
  });

  it("refuse table numbers above 32 bits, non-integers, and wrong random lengths", () => {
    const bytes = new Uint8Array(16);
    for (const tableNumber of [-1, 1.5, TABLE_NUMBER_MAX + 1, Number.NaN]) {
      expect(codeOf(() => encodeDocumentId({ tableNumber, random: bytes }))).toBe("DOCUMENT_ID_INVALID");
    }
    expect(codeOf(() => encodeDocumentId({ tableNumber: 1, random: new Uint8Array(15) }))).toBe("DOCUMENT_ID_INVALID");
    // A 5-byte varint above 2^32 - 1, with a valid checksum.
    const body = [0xff, 0xff, 0xff, 0xff, 0x1f, ...bytes];
    expect(codeOf(() => parseDocumentId(base32([...body, ...fletcher16(body)])))).toBe("DOCUMENT_ID_INVALID");
  });

  it("refuse what is not a string or is absurdly long", () => {
    for (const text of [undefined, null, 5, "", "x".repeat(65), {} as unknown]) {
      expect(codeOf(() => parseDocumentId(text))).toBe("DOCUMENT_ID_INVALID");
      expect(isDocumentId(text)).toBe(false);
    }
    expect(isDocumentId("not an id" as DocumentId)).toBe(false);
  });

  it("a routed id carries its route in the first 8 random bytes and is still an ordinary id of its table", () => {
    const random = new SeededRandom(11);
    const route = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const ids = [newDocumentId(9, random, route), newDocumentId(9, random, route)];
    expect(ids[0]).not.toBe(ids[1]); // the other 8 bytes are random
    for (const id of ids) {
      const parsed = parseDocumentId(id);
      expect(parsed.tableNumber).toBe(9);
      expect([...routeOfId(parsed)]).toEqual([...route]);
      expect(isDocumentId(id)).toBe(true);
    }
    expect(codeOf(() => newDocumentId(9, random, new Uint8Array(7)))).toBe("INTERNAL");
  });
});
