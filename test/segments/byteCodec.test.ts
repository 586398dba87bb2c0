/**
 * Scenario: the byte codec under the record encoding, and the framed envelope around it.
 * A string is written after room for its length's varint guessed from its UTF-16 length
 * and moved when the UTF-8 length needs a longer varint: strings of every length around
 * the 7-, 14- and 21-bit boundaries, in ASCII, 2-, 3- and 4-byte characters, read back
 * equal and take exactly varint + UTF-8 bytes, next to the fields written around them.
 * A reader with `viewBytes` returns keys that are views of the payload, equal to the
 * copies a default reader returns. The off-thread frame (digest and deflate on the
 * thread pool) is byte for byte the on-thread frame, each decodes the other's output, and
 * a flipped bit fails both decoders' checksum.
 */
import { describe, expect, it } from "vitest";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { ByteReader, ByteWriter } from "../../src/segments/ByteWriter.js";
import { decodeFramed, decodeFramedOffThread, encodeFramed, encodeFramedOffThread, FrameError } from "../../src/segments/framedObject.js";

const CHARACTERS = ["a", "é", "\u20ac", "\uFFFD", "😀"];

function varuintBytes(value: number): number {
  let size = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

describe("ByteWriter strings", () => {
  it("round-trips strings around every varint boundary in 1- to 4-byte characters, each taking varint + UTF-8 bytes", () => {
    const lengths = [0, 1, 42, 43, 63, 64, 127, 128, 129, 5461, 5462, 16383, 16384, 16385, 40000];
    for (const character of CHARACTERS) {
      for (const units of lengths) {
        const text = character.repeat(Math.ceil(units / character.length));
        const writer = new ByteWriter(16);
        writer.varuint(7);
        writer.string(text);
        writer.varuint(300);
        const bytes = writer.finish();
        const utf8 = Buffer.byteLength(text, "utf8");
        expect(bytes.length, `${units} units of ${character}`).toBe(1 + varuintBytes(utf8) + utf8 + 2);
        const reader = new ByteReader(Buffer.from(bytes));
        expect(reader.varuint()).toBe(7);
        expect(reader.string()).toBe(text);
        expect(reader.varuint()).toBe(300);
        expect(reader.done).toBe(true);
      }
    }
  });

  it("round-trips random mixes of strings and fields", () => {
    const random = new SeededRandom(5);
    const written: string[] = [];
    const writer = new ByteWriter(8);
    for (let index = 0; index < 2000; index++) {
      const length = randomInt(random, 3) === 0 ? randomInt(random, 20000) : randomInt(random, 200);
      let text = "";
      while (text.length < length) text += CHARACTERS[randomInt(random, CHARACTERS.length)]!;
      written.push(text);
      writer.string(text);
      writer.varuint(index);
    }
    const reader = new ByteReader(Buffer.from(writer.finish()));
    written.forEach((text, index) => {
      expect(reader.string()).toBe(text);
      expect(reader.varuint()).toBe(index);
    });
    expect(reader.done).toBe(true);
  });
});

describe("ByteReader bytes", () => {
  it("returns views of the payload with viewBytes, equal to the copies it returns by default", () => {
    const writer = new ByteWriter();
    const keys = [new Uint8Array([]), new Uint8Array([0, 255, 7]), new Uint8Array(300).fill(9)];
    for (const key of keys) writer.bytes(key);
    const payload = Buffer.from(writer.finish());
    const copies = new ByteReader(payload);
    const views = new ByteReader(payload, true);
    for (const key of keys) {
      const copy = copies.bytes();
      const view = views.bytes();
      expect(copy).toEqual(key);
      expect(view).toEqual(key);
      expect(Object.getPrototypeOf(view)).toBe(Uint8Array.prototype);
      expect(view.buffer).toBe(payload.buffer);
      expect(copy.buffer).not.toBe(payload.buffer);
    }
  });
});

describe("framed objects off the thread", () => {
  it("frames byte for byte as on the thread; each decodes the other's; a flipped bit fails both checksums", async () => {
    const random = new SeededRandom(9);
    const payload = Buffer.alloc(3 * 1024 * 1024);
    for (let at = 0; at < payload.length; at += 4) payload.writeUInt32LE(randomInt(random, 64), at);
    const header = { part: 3, shard: 1 };
    for (const compression of ["zlib", "none"] as const) {
      const onThread = encodeFramed("TEST", header, payload, compression);
      const offThread = await encodeFramedOffThread("TEST", header, payload, compression);
      expect(offThread.equals(onThread)).toBe(true);
      const decoded = await decodeFramedOffThread("TEST", onThread);
      expect(decoded.header).toEqual(header);
      expect(decoded.payload.equals(payload)).toBe(true);
      expect(decoded.hash).toBe(decodeFramed("TEST", offThread).hash);
      const flipped = Buffer.from(onThread);
      flipped[flipped.length >> 1]! ^= 1;
      expect(() => decodeFramed("TEST", flipped)).toThrow(FrameError);
      await expect(decodeFramedOffThread("TEST", flipped)).rejects.toThrow("checksum mismatch");
    }
  });
});
