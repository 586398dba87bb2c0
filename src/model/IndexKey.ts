import { CairnError, invalidArgument, VALUE_DEPTH_MAX } from "../base/index.js";
import type { DocumentId } from "./DocumentId.js";
import { encodeDocumentId, isCanonicalSpelling, parseDocumentId } from "./DocumentId.js";
import type { Value, ValueObject, ValuePath } from "./Value.js";
import {
  arrayElementInvalid,
  checkFieldName,
  checkNestingDepth,
  fieldNamesOf,
  kindOfValue,
  setField,
} from "./Value.js";
import { compareStrings } from "./compareValues.js";

/**
 * Order-preserving index keys: a tuple of values (a missing field is `undefined`) encoded
 * so that comparing the bytes (`Buffer.compare`, SQLite BLOB order) gives the tuple order
 * of `compareValues`, element by element, a shorter tuple first.
 *
 * Layout of one element: a tag byte, then
 *   missing 0x01 · null 0x02 · false 0x03 · true 0x04           (nothing more)
 *   number  0x05  8 bytes: big-endian float64, sign bit flipped for positives, all bits
 *                 flipped for negatives (so -0 < +0); NaN is always 7ff8000000000000
 *   bigint  0x06  8 bytes: big-endian int64 with the sign bit flipped
 *   string  0x07  UTF-8 bytes, escaped, then 0x00 0x01
 *   bytes   0x08  bytes, escaped, then 0x00 0x01
 *   array   0x09  each element, then 0x00
 *   object  0x0a  per field in code point order: the name as a string element, then the
 *                 value; then 0x00
 * Strings compare as UTF-8 bytes, which is Unicode code point order, not JavaScript's
 * `<` (UTF-16 code units): "\u{1F600}" sorts after "\uFF00" here, before it in JS.
 * Escaping writes a data byte 0x00 as 0x00 0xFF. The terminators (0x00 0x01, 0x00) sort
 * below every escaped byte and every tag, so a prefix sorts first and every element is
 * self-delimiting: a tuple is just its elements concatenated.
 *
 * Invariants: every byte string has at most one decoding; `decodeIndexKey` accepts
 * exactly the outputs of `encodeIndexKey` (canonical NaN, valid UTF-8, field names
 * strictly ascending and valid, nesting within VALUE_DEPTH_MAX) and re-encoding what it
 * returns gives the same bytes.
 */

const TAG = {
  missing: 0x01,
  null: 0x02,
  false: 0x03,
  true: 0x04,
  number: 0x05,
  bigint: 0x06,
  string: 0x07,
  bytes: 0x08,
  array: 0x09,
  object: 0x0a,
} as const;

const END = 0x00;
const ESCAPE_DATA_ZERO = 0xff;
const ESCAPE_END = 0x01;
const TWO_TO_63 = 2n ** 63n;
/** The transformed bytes of the one NaN index keys use (quiet NaN 7ff8… with the sign flipped). */
const CANONICAL_NAN = Uint8Array.of(0xff, 0xf8, 0, 0, 0, 0, 0, 0);

const textEncoder = new TextEncoder();
/** fatal: invalid UTF-8 is not a key; ignoreBOM: a leading U+FEFF is data, not a marker. */
const textDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Encodes a tuple. Throws VALUE_INVALID / VALUE_TOO_DEEP for an element that is not a value. */
export function encodeIndexKey(values: readonly (Value | undefined)[]): Uint8Array {
  const writer = new KeyWriter();
  const path: ValuePath = [];
  for (let index = 0; index < values.length; index++) {
    path.push(index);
    const value = values[index];
    if (value === undefined) writer.byte(TAG.missing);
    else writeValue(writer, value, 0, path);
    path.pop();
  }
  return writer.finish();
}

/** Decodes a tuple; throws INDEX_KEY_INVALID for anything `encodeIndexKey` cannot produce. */
export function decodeIndexKey(bytes: Uint8Array): (Value | undefined)[] {
  const reader = new KeyReader(bytes);
  const values: (Value | undefined)[] = [];
  while (!reader.done()) {
    if (reader.peek() === TAG.missing) {
      reader.skip();
      values.push(undefined);
    } else {
      values.push(readValue(reader, 0));
    }
  }
  return values;
}

/**
 * Throws INDEX_KEY_INVALID unless `key` is a complete, canonical encoded tuple. Runs on
 * every index entry a node applies, so the common key (scalars, ASCII strings) is checked
 * by one pass over its bytes that builds nothing; any other key — nested values, non-ASCII
 * text, escaped zeros, infinities and NaN, or a key that is not valid — goes to
 * `decodeIndexKey`, whose verdict and error are the rule. The fast pass only ever says
 * "valid" for keys the decoder accepts.
 */
export function validateIndexKey(key: Uint8Array): void {
  if (!(key instanceof Uint8Array)) throw keyInvalid("an index key must be a Uint8Array", 0);
  if (!isPlainScalarKey(key)) decodeIndexKey(key);
}

/**
 * True if `key` is a valid tuple of missing, null, boolean, finite number, bigint,
 * ASCII string without zero bytes, or bytes elements; false if it is not, or if only the
 * decoder can tell.
 */
function isPlainScalarKey(key: Uint8Array): boolean {
  let at = 0;
  while (at < key.length) {
    const tag = key[at++]!;
    switch (tag) {
      case TAG.missing:
      case TAG.null:
      case TAG.false:
      case TAG.true:
        break;
      case TAG.number: {
        if (at + 8 > key.length) return false;
        // The original float's exponent bits (undo the sign transform of writeNumber):
        // all ones is an infinity or a NaN, which the decoder checks for canonical form.
        const high = key[at]! & 0x80 ? key[at]! & 0x7f : ~key[at]! & 0x7f;
        const next = key[at]! & 0x80 ? key[at + 1]! : ~key[at + 1]! & 0xff;
        if (high === 0x7f && (next & 0xf0) === 0xf0) return false;
        at += 8;
        break;
      }
      case TAG.bigint:
        if (at + 8 > key.length) return false;
        at += 8;
        break;
      case TAG.string:
      case TAG.bytes: {
        // Up to the terminator 0x00 0x01; an escaped zero (0x00 0xFF) is left to the decoder.
        for (;;) {
          if (at >= key.length) return false;
          const byte = key[at++]!;
          if (byte === 0x00) {
            if (at >= key.length || key[at] !== ESCAPE_END) return false;
            at++;
            break;
          }
          if (byte >= 0x80 && tag === TAG.string) return false;
        }
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

/**
 * The key a document has in an index: its indexed field values, then its creation time
 * and id. The two system fields make every stored key unique and order ties by age.
 */
export function documentIndexKey(
  fieldValues: readonly (Value | undefined)[],
  creationTime: number,
  id: DocumentId,
): Uint8Array {
  if (typeof creationTime !== "number" || !Number.isFinite(creationTime)) {
    throw invalidArgument("creation time must be a finite number", { creationTime });
  }
  // Parsed to check it; a parseable id in lowercase is canonical already (isCanonicalSpelling).
  const parsed = parseDocumentId(id);
  return encodeIndexKey([...fieldValues, creationTime, isCanonicalSpelling(id) ? id : encodeDocumentId(parsed)]);
}

export interface DocumentIndexKey {
  readonly fieldValues: (Value | undefined)[];
  readonly creationTime: number;
  readonly id: DocumentId;
}

/** Inverse of `documentIndexKey`; INDEX_KEY_INVALID if the key does not end in (time, id). */
export function decodeDocumentIndexKey(key: Uint8Array): DocumentIndexKey {
  const values = decodeIndexKey(key);
  const creationTime = values[values.length - 2];
  const id = values[values.length - 1];
  if (values.length < 2 || typeof creationTime !== "number" || !Number.isFinite(creationTime)) {
    throw keyInvalid("a document index key must end in a creation time and an id", key.length);
  }
  if (typeof id !== "string") throw keyInvalid("a document index key must end in a document id", key.length);
  let canonical: DocumentId;
  try {
    canonical = encodeDocumentId(parseDocumentId(id));
  } catch (error) {
    throw new CairnError("INDEX_KEY_INVALID", `index key ends in an invalid document id: ${String(id)}`, {
      cause: error,
    });
  }
  if (canonical !== id) throw keyInvalid("the document id in the key is not in canonical form", key.length);
  return { fieldValues: values.slice(0, -2), creationTime, id: canonical };
}

/**
 * The encoding of a prefix of an index's fields. Every stored key whose first fields
 * equal `values` starts with these bytes, so `prefixRange` over it selects them, and
 * (because stored keys always continue after the prefix) the prefix of `[a, b]` is a
 * lower bound for `b >= …` and its `prefixEnd` one for `b > …`; see IndexRange.
 */
export function indexKeyPrefix(values: readonly (Value | undefined)[]): Uint8Array {
  return encodeIndexKey(values);
}

// ---- encoding ---------------------------------------------------------------------------

function writeValue(writer: KeyWriter, value: unknown, depth: number, path: ValuePath): void {
  const kind = kindOfValue(value, path);
  switch (kind) {
    case "null":
      return writer.byte(TAG.null);
    case "boolean":
      return writer.byte(value ? TAG.true : TAG.false);
    case "number":
      return writeNumber(writer, value as number);
    case "bigint":
      writer.byte(TAG.bigint);
      return writer.uint64(BigInt.asUintN(64, (value as bigint) + TWO_TO_63));
    case "string":
      writer.byte(TAG.string);
      return writer.text(value as string);
    case "bytes":
      writer.byte(TAG.bytes);
      return writer.escaped(value as Uint8Array);
    case "array":
      checkNestingDepth(depth, path);
      return writeArray(writer, value as unknown[], depth, path);
    case "object":
      checkNestingDepth(depth, path);
      return writeObject(writer, value as ValueObject, depth, path);
  }
}

/** Scratch space for one float64 (encoding is synchronous, so one is enough). */
const numberBytes = new Uint8Array(8);
const numberView = new DataView(numberBytes.buffer);

function writeNumber(writer: KeyWriter, value: number): void {
  writer.byte(TAG.number);
  if (Number.isNaN(value)) return writer.bytes(CANONICAL_NAN);
  numberView.setFloat64(0, value);
  if (numberBytes[0]! & 0x80) for (let index = 0; index < 8; index++) numberBytes[index] = ~numberBytes[index]! & 0xff;
  else numberBytes[0] = numberBytes[0]! | 0x80;
  writer.bytes(numberBytes);
}

function writeArray(writer: KeyWriter, array: readonly unknown[], depth: number, path: ValuePath): void {
  writer.byte(TAG.array);
  for (let index = 0; index < array.length; index++) {
    path.push(index);
    const element = array[index];
    if (element === undefined) throw arrayElementInvalid(array, index, path);
    writeValue(writer, element, depth + 1, path);
    path.pop();
  }
  writer.byte(END);
}

function writeObject(writer: KeyWriter, object: ValueObject, depth: number, path: ValuePath): void {
  writer.byte(TAG.object);
  const names = fieldNamesOf(object, path).sort(compareStrings);
  for (const name of names) {
    writer.byte(TAG.string);
    writer.escaped(textEncoder.encode(name));
    path.push(name);
    writeValue(writer, object[name], depth + 1, path);
    path.pop();
  }
  writer.byte(END);
}

/**
 * A growable byte buffer; index keys are small, so doubling from 256 bytes is plenty. Every
 * writer starts on one shared scratch buffer (encoding is synchronous and never nests), so
 * a key costs one allocation: its copy in `finish`.
 */
let scratch = new Uint8Array(256);

class KeyWriter {
  private buffer = scratch;
  private length = 0;

  byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  bytes(values: Uint8Array): void {
    this.reserve(values.length);
    this.buffer.set(values, this.length);
    this.length += values.length;
  }

  uint64(value: bigint): void {
    this.reserve(8);
    new DataView(this.buffer.buffer).setBigUint64(this.length, value);
    this.length += 8;
  }

  /** A string's UTF-8, escaped as `escaped` does; ASCII text is written as is, without an encoder. */
  text(value: string): void {
    this.reserve(value.length + 2);
    const start = this.length;
    for (let index = 0; index < value.length; index++) {
      const code = value.charCodeAt(index);
      if (code === 0 || code >= 0x80) {
        this.length = start;
        return this.escaped(textEncoder.encode(value));
      }
      this.buffer[this.length++] = code;
    }
    this.buffer[this.length++] = 0x00;
    this.buffer[this.length++] = ESCAPE_END;
  }

  /** Data with each 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01. */
  escaped(data: Uint8Array): void {
    this.reserve(data.length * 2 + 2);
    for (const byte of data) {
      this.buffer[this.length++] = byte;
      if (byte === 0x00) this.buffer[this.length++] = ESCAPE_DATA_ZERO;
    }
    this.buffer[this.length++] = 0x00;
    this.buffer[this.length++] = ESCAPE_END;
  }

  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + extra));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
    // Kept for the next keys, up to a size worth keeping.
    if (grown.length <= 64 * 1024) scratch = grown;
  }
}

// ---- decoding ---------------------------------------------------------------------------

function keyInvalid(reason: string, offset: number): CairnError {
  return new CairnError("INDEX_KEY_INVALID", `invalid index key at byte ${offset}: ${reason}`, {
    details: { offset },
  });
}

function readValue(reader: KeyReader, depth: number): Value {
  const tagOffset = reader.offset;
  const tag = reader.next();
  switch (tag) {
    case TAG.null:
      return null;
    case TAG.false:
      return false;
    case TAG.true:
      return true;
    case TAG.number:
      return readNumber(reader);
    case TAG.bigint:
      return BigInt.asIntN(64, reader.uint64() - TWO_TO_63);
    case TAG.string:
      return readString(reader);
    case TAG.bytes:
      return reader.unescaped();
    case TAG.array:
      return readArray(reader, depth, tagOffset);
    case TAG.object:
      return readObject(reader, depth, tagOffset);
    default:
      throw keyInvalid(`unexpected tag 0x${tag.toString(16).padStart(2, "0")}`, tagOffset);
  }
}

function readNumber(reader: KeyReader): number {
  const offset = reader.offset;
  const bytes = reader.take(8).slice();
  if (bytes[0]! & 0x80) bytes[0] = bytes[0]! & 0x7f;
  else for (let index = 0; index < 8; index++) bytes[index] = ~bytes[index]! & 0xff;
  const value = new DataView(bytes.buffer).getFloat64(0);
  if (Number.isNaN(value) && !reader.matches(offset, CANONICAL_NAN)) throw keyInvalid("non-canonical NaN", offset);
  return value;
}

function readString(reader: KeyReader): string {
  const offset = reader.offset;
  try {
    return textDecoder.decode(reader.unescaped());
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw keyInvalid("string is not valid UTF-8", offset);
  }
}

function readArray(reader: KeyReader, depth: number, tagOffset: number): Value[] {
  if (depth >= VALUE_DEPTH_MAX) throw keyInvalid(`nests deeper than ${VALUE_DEPTH_MAX}`, tagOffset);
  const array: Value[] = [];
  while (reader.peek() !== END) {
    if (reader.peek() === TAG.missing) throw keyInvalid("a missing value inside an array", reader.offset);
    array.push(readValue(reader, depth + 1));
  }
  reader.skip();
  return array;
}

function readObject(reader: KeyReader, depth: number, tagOffset: number): ValueObject {
  if (depth >= VALUE_DEPTH_MAX) throw keyInvalid(`nests deeper than ${VALUE_DEPTH_MAX}`, tagOffset);
  const object: ValueObject = {};
  let previousName: string | null = null;
  while (reader.peek() !== END) {
    const nameOffset = reader.offset;
    if (reader.next() !== TAG.string) throw keyInvalid("an object field must start with a name", nameOffset);
    const name = readString(reader);
    checkDecodedFieldName(name, previousName, nameOffset);
    setField(object, name, readValue(reader, depth + 1));
    previousName = name;
  }
  reader.skip();
  return object;
}

function checkDecodedFieldName(name: string, previousName: string | null, offset: number): void {
  try {
    checkFieldName(name, []);
  } catch (error) {
    throw new CairnError("INDEX_KEY_INVALID", `invalid index key at byte ${offset}: bad field name`, {
      cause: error,
      details: { offset },
    });
  }
  if (previousName !== null && compareStrings(previousName, name) >= 0) {
    throw keyInvalid("object field names are not strictly ascending", offset);
  }
}

class KeyReader {
  offset = 0;
  private readonly input: Uint8Array;

  constructor(input: Uint8Array) {
    // A plain Uint8Array view, never a Buffer: Buffer#slice aliases instead of copying,
    // and decoding must neither write into the caller's bytes nor hand back views of them.
    this.input = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  }

  done(): boolean {
    return this.offset >= this.input.length;
  }

  peek(): number {
    if (this.done()) throw keyInvalid("key ends too early", this.offset);
    return this.input[this.offset]!;
  }

  next(): number {
    const byte = this.peek();
    this.offset++;
    return byte;
  }

  skip(): void {
    this.offset++;
  }

  take(length: number): Uint8Array {
    if (this.offset + length > this.input.length) throw keyInvalid("key ends too early", this.input.length);
    const slice = this.input.subarray(this.offset, this.offset + length);
    this.offset += length;
    return slice;
  }

  uint64(): bigint {
    const bytes = this.take(8);
    return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0);
  }

  matches(offset: number, expected: Uint8Array): boolean {
    return expected.every((byte, index) => this.input[offset + index] === byte);
  }

  /** Reads escaped data up to its 0x00 0x01 terminator and returns the raw bytes. */
  unescaped(): Uint8Array {
    const chunks: Uint8Array[] = [];
    let start = this.offset;
    for (;;) {
      const zero = this.input.indexOf(0x00, this.offset);
      if (zero < 0 || zero + 1 >= this.input.length) throw keyInvalid("unterminated string or bytes", start);
      const marker = this.input[zero + 1];
      this.offset = zero + 2;
      if (marker === ESCAPE_END) {
        chunks.push(this.input.subarray(start, zero));
        return concat(chunks);
      }
      if (marker !== ESCAPE_DATA_ZERO) throw keyInvalid("0x00 not followed by 0x01 or 0xFF", zero);
      chunks.push(this.input.subarray(start, zero + 1));
      start = this.offset;
    }
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!.slice();
  const out = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
