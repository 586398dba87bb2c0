import { CairnError, type Random } from "../base/index.js";
import { ROUTE_BYTES } from "./shardFor.js";

/**
 * A document id: the table number it belongs to, 16 random bytes, and a 16-bit checksum,
 * rendered in lowercase Crockford base32 so it is URL-safe and case-insensitive.
 *
 * Binary layout: varint(tableNumber) ‖ 16 random bytes ‖ fletcher16(previous bytes). In
 * a table with a shard key the first 8 "random" bytes are the document's route instead.
 * A typo, a truncated id or an id of another table is caught at parse time.
 */
export type DocumentId = string & { readonly __brand: "DocumentId" };

export interface ParsedDocumentId {
  readonly tableNumber: number;
  readonly random: Uint8Array;
}

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const RANDOM_BYTES = 16;
/** Table numbers fit in 32 bits; a larger schema is not a document database's shape. */
export const TABLE_NUMBER_MAX = 0xffff_ffff;

/**
 * Both ASCII cases decode; nothing else does. (`toLowerCase()` would also fold non-ASCII
 * look-alikes such as the Kelvin sign U+212A into "k", giving one id extra spellings.)
 */
const DECODE = new Int8Array(128).fill(-1);
for (const [index, char] of [...ALPHABET].entries()) {
  DECODE[char.charCodeAt(0)] = index;
  DECODE[char.toUpperCase().charCodeAt(0)] = index;
}

/**
 * A new id of `tableNumber`. With a `route` (a document of a sharded table: see
 * shardFor.ts) the route fills the first ROUTE_BYTES of the random bytes, so the id
 * names its lane; the other 8 bytes stay random.
 */
export function newDocumentId(tableNumber: number, random: Random, route?: Uint8Array): DocumentId {
  const bytes = random.bytes(RANDOM_BYTES);
  if (route !== undefined) {
    if (route.byteLength !== ROUTE_BYTES) throw new CairnError("INTERNAL", `a route has ${ROUTE_BYTES} bytes, not ${route.byteLength}`);
    bytes.set(route, 0);
  }
  return encodeDocumentId({ tableNumber, random: bytes });
}

/** The route an id of a sharded table carries (the first ROUTE_BYTES of its random bytes). */
export function routeOfId(parsed: ParsedDocumentId): Uint8Array {
  return parsed.random.slice(0, ROUTE_BYTES);
}

export function encodeDocumentId(parsed: ParsedDocumentId): DocumentId {
  assertTableNumber(parsed.tableNumber);
  if (parsed.random.byteLength !== RANDOM_BYTES) {
    throw new CairnError("DOCUMENT_ID_INVALID", `document id needs ${RANDOM_BYTES} random bytes`);
  }
  const varint = encodeVarint(parsed.tableNumber);
  const bytes = new Uint8Array(varint.length + RANDOM_BYTES + 2);
  bytes.set(varint);
  bytes.set(parsed.random, varint.length);
  const body = bytes.subarray(0, bytes.length - 2);
  const [c0, c1] = fletcher16(body);
  bytes[bytes.length - 2] = c0;
  bytes[bytes.length - 1] = c1;
  return base32Encode(bytes) as DocumentId;
}

export function parseDocumentId(text: unknown): ParsedDocumentId {
  if (typeof text !== "string" || text.length === 0 || text.length > 64) {
    throw invalidId(text, "not a document id string");
  }
  const bytes = base32Decode(text);
  if (bytes === null) throw invalidId(text, "contains characters outside the id alphabet");
  const { value: tableNumber, length: varintLength } = decodeVarint(bytes) ?? { value: -1, length: 0 };
  if (tableNumber < 0 || bytes.length !== varintLength + RANDOM_BYTES + 2) {
    throw invalidId(text, "has the wrong length");
  }
  const body = bytes.subarray(0, bytes.length - 2);
  const [c0, c1] = fletcher16(body);
  if (bytes[bytes.length - 2] !== c0 || bytes[bytes.length - 1] !== c1) {
    throw invalidId(text, "fails its checksum");
  }
  return { tableNumber, random: bytes.slice(varintLength, varintLength + RANDOM_BYTES) };
}

/**
 * The first and last strings an id of `tableNumber` can be spelled as (canonical form):
 * every id of the table lies in [first, last] in string (and UTF-8 byte) order, and no
 * id of another table does, because the table's varint leads every id's bits. What a
 * scan of one table's documents in id order is bounded by.
 */
export function documentIdSpan(tableNumber: number): { readonly first: string; readonly last: string } {
  assertTableNumber(tableNumber);
  const varint = encodeVarint(tableNumber);
  const low = new Uint8Array(varint.length + RANDOM_BYTES + 2);
  low.set(varint);
  const high = low.slice();
  high.fill(0xff, varint.length);
  return { first: base32Encode(low), last: base32Encode(high) };
}

/** How many ids tableNumberOfId remembers (~100 bytes each). */
const IDS_REMEMBERED = 8_192;
const rememberedIds = new Map<string, number>();

/**
 * `parseDocumentId(text).tableNumber`, with canonical ids checked lately remembered: a
 * commit checks each of its ids several times (its arguments, its reads and writes, the
 * apply validator), and parsing one (base32, checksum) cost more than all the rest of
 * those checks. Cleared when full.
 */
export function tableNumberOfId(text: unknown): number {
  if (typeof text === "string") {
    const known = rememberedIds.get(text);
    if (known !== undefined) return known;
  }
  const { tableNumber } = parseDocumentId(text);
  if (isCanonicalSpelling(text as string)) {
    if (rememberedIds.size >= IDS_REMEMBERED) rememberedIds.clear();
    rememberedIds.set(text as string, tableNumber);
  }
  return tableNumber;
}

/** DOCUMENT_ID_INVALID unless `text` is an id, DOCUMENT_ID_WRONG_TABLE unless one of `tableNumber` (parseDocumentIdOfTable without the parse result). */
export function checkDocumentIdOfTable(text: unknown, tableNumber: number): void {
  const actual = tableNumberOfId(text);
  if (actual !== tableNumber) throw wrongTable(text, tableNumber, actual);
}

/** Parses `text` and checks that it belongs to `tableNumber`; returns the canonical form. */
export function documentIdOfTable(text: unknown, tableNumber: number): DocumentId {
  return encodeDocumentId(parseDocumentIdOfTable(text, tableNumber));
}

/** Parses `text` and checks that it belongs to `tableNumber`. */
export function parseDocumentIdOfTable(text: unknown, tableNumber: number): ParsedDocumentId {
  const parsed = parseDocumentId(text);
  if (parsed.tableNumber !== tableNumber) throw wrongTable(text, tableNumber, parsed.tableNumber);
  return parsed;
}

function wrongTable(text: unknown, expected: number, actual: number): CairnError {
  return new CairnError("DOCUMENT_ID_WRONG_TABLE", `document id ${String(text)} belongs to table ${actual}, not table ${expected}`, {
    details: { id: text, expectedTable: expected, actualTable: actual },
  });
}

/**
 * Whether a parseable id is spelled canonically. The decoder already refuses non-zero
 * padding and over-long tails, so a decodable id re-encodes to the same letters up to
 * case: lowercase is canonical, and no re-encoding is needed to tell (the check runs on
 * every document of every commit).
 */
export function isCanonicalSpelling(text: string): boolean {
  return !/[A-Z]/.test(text);
}

/** Whether `text` is a document id in canonical (lowercase) form. */
export function isDocumentId(text: unknown): text is DocumentId {
  try {
    return encodeDocumentId(parseDocumentId(text)) === text;
  } catch {
    return false;
  }
}

function assertTableNumber(tableNumber: number): void {
  if (!Number.isInteger(tableNumber) || tableNumber < 0 || tableNumber > TABLE_NUMBER_MAX) {
    throw new CairnError("DOCUMENT_ID_INVALID", `table number must be an integer in 0..${TABLE_NUMBER_MAX}`, {
      details: { tableNumber },
    });
  }
}

function invalidId(text: unknown, reason: string): CairnError {
  return new CairnError("DOCUMENT_ID_INVALID", `invalid document id ${JSON.stringify(text)}: ${reason}`, {
    details: { id: text },
  });
}

function encodeVarint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

function decodeVarint(bytes: Uint8Array): { value: number; length: number } | null {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < Math.min(bytes.length, 5); i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) {
      // Reject non-canonical encodings (trailing zero groups) so every id has one spelling.
      if (i > 0 && byte === 0) return null;
      return value <= TABLE_NUMBER_MAX ? { value, length: i + 1 } : null;
    }
    scale *= 0x80;
  }
  return null;
}

function fletcher16(bytes: ArrayLike<number>): [number, number] {
  let sum1 = 0;
  let sum2 = 0;
  for (let i = 0; i < bytes.length; i++) {
    sum1 = (sum1 + bytes[i]!) % 255;
    sum2 = (sum2 + sum1) % 255;
  }
  return [sum1, sum2];
}

function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

function base32Decode(text: string): Uint8Array | null {
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let length = 0;
  let buffer = 0;
  let bits = 0;
  // By UTF-16 code unit: anything outside ASCII (a surrogate half included) is refused.
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    const digit = code < 128 ? DECODE[code]! : -1;
    if (digit < 0) return null;
    buffer = (buffer << 5) | digit;
    bits += 5;
    if (bits >= 8) {
      out[length++] = (buffer >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  }
  // Leftover bits must be short zero padding, or two spellings would decode to one id.
  if (bits >= 5 || buffer !== 0) return null;
  return out;
}
