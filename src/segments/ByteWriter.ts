import { assert } from "../base/index.js";

/**
 * Growable little binary writer for the segment and snapshot payload codecs. Integers are
 * unsigned LEB128 varints up to 2^53 (timestamps are µs, ~2^51 today); strings and
 * byte strings are length-prefixed.
 */
export class ByteWriter {
  private buffer: Buffer;
  private length = 0;

  constructor(initialBytes = 4096) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  get byteLength(): number {
    return this.length;
  }

  u8(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  varuint(value: number): void {
    // Callers validate what they encode (commit checks every unit), so this is a bug if hit.
    assert(Number.isSafeInteger(value) && value >= 0, `varuint out of range: ${value}`);
    this.reserve(8);
    let rest = value;
    while (rest >= 0x80) {
      this.buffer[this.length++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.buffer[this.length++] = rest;
  }

  string(value: string): void {
    const maxBytes = value.length * 3;
    this.reserve(maxBytes + 8);
    // Write the text after room for the varint of its length if every unit took one byte
    // (UTF-8 takes at least that), then move it when the real length needs a longer one:
    // only text with enough non-ASCII to cross a 7-bit boundary moves.
    const lengthAt = this.length;
    const textAt = lengthAt + varuintSize(value.length);
    const written = this.buffer.write(value, textAt, "utf8");
    const writtenAt = lengthAt + varuintSize(written);
    if (writtenAt !== textAt) this.buffer.copy(this.buffer, writtenAt, textAt, textAt + written);
    this.varuint(written);
    this.length += written;
  }

  bytes(value: Uint8Array): void {
    this.varuint(value.byteLength);
    this.raw(value);
  }

  /** Bytes as they are, without a length: records encoded elsewhere, copied in whole. */
  raw(value: Uint8Array): void {
    this.reserve(value.byteLength);
    this.buffer.set(value, this.length);
    this.length += value.byteLength;
  }

  /** The written bytes (a view; copy it if the writer is reused). */
  finish(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + extra) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

function varuintSize(value: number): number {
  let size = 1;
  let rest = value;
  while (rest >= 0x80) {
    rest = Math.floor(rest / 0x80);
    size++;
  }
  return size;
}

/** Reader for ByteWriter's output; throws RangeError on truncated or malformed input. */
export class ByteReader {
  private offset = 0;

  constructor(
    private readonly buffer: Buffer,
    /**
     * `bytes()` returns views into `buffer` instead of copies: no allocation per key, but
     * any one kept keeps the whole buffer alive (for decoded rows that are consumed and
     * dropped, as a snapshot's are).
     */
    private readonly viewBytes = false,
  ) {}

  get done(): boolean {
    return this.offset >= this.buffer.length;
  }

  /** Where the next read starts. */
  get position(): number {
    return this.offset;
  }

  /** Skips a length-prefixed string or byte string; returns where its bytes start (they end at `position`). */
  skipBytes(): number {
    const length = this.varuint();
    return this.take(length) - length;
  }

  u8(): number {
    if (this.offset >= this.buffer.length) throw new RangeError("truncated payload");
    return this.buffer[this.offset++]!;
  }

  varuint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const byte = this.u8();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) {
        if (!Number.isSafeInteger(value)) throw new RangeError("varuint exceeds 2^53");
        return value;
      }
      scale *= 0x80;
    }
    throw new RangeError("varuint longer than 8 bytes");
  }

  string(): string {
    const length = this.varuint();
    const end = this.take(length);
    return this.buffer.toString("utf8", end - length, end);
  }

  bytes(): Uint8Array {
    const length = this.varuint();
    const end = this.take(length);
    if (this.viewBytes) return new Uint8Array(this.buffer.buffer, this.buffer.byteOffset + end - length, length);
    return new Uint8Array(this.buffer.subarray(end - length, end));
  }

  private take(length: number): number {
    const end = this.offset + length;
    if (end > this.buffer.length) throw new RangeError("truncated payload");
    this.offset = end;
    return end;
  }
}
