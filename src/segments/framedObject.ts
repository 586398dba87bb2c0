import { createHash, webcrypto } from "node:crypto";
import { promisify } from "node:util";
import { deflate, deflateSync, inflate, inflateSync } from "node:zlib";

const deflateOffThread = promisify(deflate);
const inflateOffThread = promisify(inflate);
/**
 * Output buffer of the thread-pool (de)compression: each one filled is a callback on the
 * caller's thread, and more than one are concatenated at the end (a copy of the whole) —
 * at zlib's default 16 KiB an 8 MiB snapshot part made ~500 callbacks and a copy. Room
 * for a whole part (its target plus a chunk) makes it one of each; pages never written
 * cost no memory.
 */
const OFF_THREAD_CHUNK_BYTES = 16 * 1024 * 1024;

/**
 * The envelope of every immutable object Cairn writes (segments, snapshot parts):
 *
 *   magic (4 bytes) ‖ format (u8) ‖ compression (u8: 0 none, 1 zlib) ‖
 *   headerLength (u32 BE) ‖ header (UTF-8 JSON) ‖ payload ‖ sha256(all preceding bytes)
 *
 * The trailing sha256 is both the checksum and the object's identity (`hash`): segments
 * chain by it. The header stays uncompressed so tools can read it cheaply.
 */
export const FRAME_FORMAT = 1;
const PREFIX_BYTES = 4 + 1 + 1 + 4;
const HASH_BYTES = 32;

export type Compression = "none" | "zlib";

export interface FramedObject<H> {
  readonly header: H;
  /** Uncompressed payload. */
  readonly payload: Buffer;
  /** Lowercase hex sha256 of everything before the trailer. */
  readonly hash: string;
}

export class FrameError extends Error {}

export function encodeFramed(magic: string, header: object, payload: Uint8Array, compression: Compression): Buffer {
  return frame(magic, header, compression === "zlib" ? deflateSync(payload, { level: 1 }) : payload, compression);
}

/**
 * `encodeFramed` with the deflate on libuv's thread pool: the caller's thread is free
 * meanwhile (a restore or export overlaps it with reading the next rows). Not for the
 * shard engine's own paths, which the seeded simulation runs in virtual time.
 */
export async function encodeFramedOffThread(magic: string, header: object, payload: Uint8Array, compression: Compression): Promise<Buffer> {
  const body = compression === "zlib" ? await deflateOffThread(payload, { level: 1, chunkSize: OFF_THREAD_CHUNK_BYTES }) : payload;
  const framed = unsealedFrame(magic, header, body, compression);
  // WebCrypto's digest runs on the thread pool too.
  framed.set(new Uint8Array(await webcrypto.subtle.digest("SHA-256", framed.subarray(0, framed.length - HASH_BYTES))), framed.length - HASH_BYTES);
  return framed;
}

function frame(magic: string, header: object, body: Uint8Array, compression: Compression): Buffer {
  const framed = unsealedFrame(magic, header, body, compression);
  framed.set(createHash("sha256").update(framed.subarray(0, framed.length - HASH_BYTES)).digest(), framed.length - HASH_BYTES);
  return framed;
}

/** The object with room for its trailing hash, not yet written. */
function unsealedFrame(magic: string, header: object, body: Uint8Array, compression: Compression): Buffer {
  const headerBytes = Buffer.from(JSON.stringify(header), "utf8");
  const framed = Buffer.allocUnsafe(PREFIX_BYTES + headerBytes.length + body.byteLength + HASH_BYTES);
  framed.write(magic, 0, 4, "latin1");
  framed.writeUInt8(FRAME_FORMAT, 4);
  framed.writeUInt8(compression === "zlib" ? 1 : 0, 5);
  framed.writeUInt32BE(headerBytes.length, 6);
  framed.set(headerBytes, PREFIX_BYTES);
  framed.set(body, PREFIX_BYTES + headerBytes.length);
  return framed;
}

/** Verifies the checksum and splits the object; throws FrameError with the reason. */
export function decodeFramed(magic: string, bytes: Uint8Array): FramedObject<unknown> {
  const buffer = checkedEnvelope(magic, bytes);
  checkHash(buffer, createHash("sha256").update(buffer.subarray(0, buffer.length - HASH_BYTES)).digest());
  const { header, body, compression, hash } = unframe(buffer);
  return { header, payload: compression === 0 ? body : inflateOrThrow(body), hash };
}

/** `decodeFramed` with the checksum and the inflate on libuv's thread pool (see encodeFramedOffThread). */
export async function decodeFramedOffThread(magic: string, bytes: Uint8Array): Promise<FramedObject<unknown>> {
  const buffer = checkedEnvelope(magic, bytes);
  checkHash(buffer, Buffer.from(await webcrypto.subtle.digest("SHA-256", buffer.subarray(0, buffer.length - HASH_BYTES))));
  const { header, body, compression, hash } = unframe(buffer);
  if (compression === 0) return { header, payload: body, hash };
  try {
    return { header, payload: await inflateOffThread(body, { chunkSize: OFF_THREAD_CHUNK_BYTES }), hash };
  } catch (error) {
    throw new FrameError(`payload does not inflate: ${String(error)}`);
  }
}

/** The object as a Buffer once its magic, format and length are right. */
function checkedEnvelope(magic: string, bytes: Uint8Array): Buffer {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < PREFIX_BYTES + HASH_BYTES) throw new FrameError("object is shorter than its envelope");
  if (buffer.toString("latin1", 0, 4) !== magic) throw new FrameError(`wrong magic (expected ${magic})`);
  const format = buffer.readUInt8(4);
  if (format !== FRAME_FORMAT) throw new FrameError(`unsupported format ${format}`);
  return buffer;
}

function checkHash(buffer: Buffer, actualHash: Buffer): void {
  if (!actualHash.equals(buffer.subarray(buffer.length - HASH_BYTES))) throw new FrameError("checksum mismatch");
}

/** Splits an object whose envelope and checksum were checked. */
function unframe(buffer: Buffer): { readonly header: unknown; readonly body: Buffer; readonly compression: 0 | 1; readonly hash: string } {
  const compression = buffer.readUInt8(5);
  const headerLength = buffer.readUInt32BE(6);
  const headerEnd = PREFIX_BYTES + headerLength;
  if (headerEnd > buffer.length - HASH_BYTES) throw new FrameError("header runs past the end");
  let header: unknown;
  try {
    header = JSON.parse(buffer.toString("utf8", PREFIX_BYTES, headerEnd));
  } catch {
    throw new FrameError("header is not JSON");
  }
  if (compression !== 0 && compression !== 1) throw new FrameError(`unknown compression ${compression}`);
  return { header, body: buffer.subarray(headerEnd, buffer.length - HASH_BYTES), compression, hash: buffer.toString("hex", buffer.length - HASH_BYTES) };
}

function inflateOrThrow(body: Buffer): Buffer {
  try {
    return inflateSync(body);
  } catch (error) {
    throw new FrameError(`payload does not inflate: ${String(error)}`);
  }
}
