import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { deflate, deflateSync, inflate, inflateSync } from "node:zlib";

const deflateOffThread = promisify(deflate);
const inflateOffThread = promisify(inflate);

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
  return frame(magic, header, compression === "zlib" ? await deflateOffThread(payload, { level: 1 }) : payload, compression);
}

function frame(magic: string, header: object, body: Uint8Array, compression: Compression): Buffer {
  const headerBytes = Buffer.from(JSON.stringify(header), "utf8");
  const prefix = Buffer.alloc(PREFIX_BYTES);
  prefix.write(magic, 0, 4, "latin1");
  prefix.writeUInt8(FRAME_FORMAT, 4);
  prefix.writeUInt8(compression === "zlib" ? 1 : 0, 5);
  prefix.writeUInt32BE(headerBytes.length, 6);
  const hash = createHash("sha256").update(prefix).update(headerBytes).update(body).digest();
  return Buffer.concat([prefix, headerBytes, body, hash]);
}

/** Verifies the checksum and splits the object; throws FrameError with the reason. */
export function decodeFramed(magic: string, bytes: Uint8Array): FramedObject<unknown> {
  const { header, body, compression, hash } = unframe(magic, bytes);
  return { header, payload: compression === 0 ? body : inflateOrThrow(body), hash };
}

/** `decodeFramed` with the inflate on libuv's thread pool (see encodeFramedOffThread). */
export async function decodeFramedOffThread(magic: string, bytes: Uint8Array): Promise<FramedObject<unknown>> {
  const { header, body, compression, hash } = unframe(magic, bytes);
  if (compression === 0) return { header, payload: body, hash };
  try {
    return { header, payload: await inflateOffThread(body), hash };
  } catch (error) {
    throw new FrameError(`payload does not inflate: ${String(error)}`);
  }
}

function unframe(magic: string, bytes: Uint8Array): { readonly header: unknown; readonly body: Buffer; readonly compression: 0 | 1; readonly hash: string } {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < PREFIX_BYTES + HASH_BYTES) throw new FrameError("object is shorter than its envelope");
  if (buffer.toString("latin1", 0, 4) !== magic) throw new FrameError(`wrong magic (expected ${magic})`);
  const format = buffer.readUInt8(4);
  if (format !== FRAME_FORMAT) throw new FrameError(`unsupported format ${format}`);
  const expectedHash = buffer.subarray(buffer.length - HASH_BYTES);
  const actualHash = createHash("sha256").update(buffer.subarray(0, buffer.length - HASH_BYTES)).digest();
  if (!actualHash.equals(expectedHash)) throw new FrameError("checksum mismatch");
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
  return { header, body: buffer.subarray(headerEnd, buffer.length - HASH_BYTES), compression, hash: actualHash.toString("hex") };
}

function inflateOrThrow(body: Buffer): Buffer {
  try {
    return inflateSync(body);
  } catch (error) {
    throw new FrameError(`payload does not inflate: ${String(error)}`);
  }
}
