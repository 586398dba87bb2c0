import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type Clock,
  CairnError,
  drained,
  FILE_CHUNK_BYTES,
  hasErrorCode,
  isCasConflict,
  randomHex,
  type Random,
  UPLOAD_DURATION_MS_MAX,
  UPLOAD_URL_TTL_MS,
} from "../base/index.js";
import { fileChunkKey, type FileService, type FunctionRuntime, type StoredFile } from "../functions/index.js";
import type { DocumentId, Value } from "../model/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { SyncBackend } from "../sync/index.js";
import { byteRangeOf, ifRangeHolds } from "./byteRange.js";
import { sendError, sendJson } from "./HttpApi.js";

export interface FileStoreOptions {
  /** The deployment's bucket: chunks are `files/<upload>/<index>` there. */
  readonly store: ObjectStore;
  /** Commits a file's document (`_system:storeFile`, forwarded to shard 0's writer when that is elsewhere) and reads files. */
  readonly backend: SyncBackend;
  readonly runtime: FunctionRuntime;
  /** The key upload URLs are signed with, the same on every node (fileUploadSecret). */
  readonly secret: Uint8Array;
  /** The node's URL, as clients reach it (URLs name it). */
  readonly baseUrl: () => string | null;
  /** Largest file taken. */
  readonly fileBytesMax: number;
  /** Longest upload, first chunk to commit (under the file collector's grace; default UPLOAD_DURATION_MS_MAX). */
  readonly uploadDurationMsMax?: number;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
}

/** Where upload URLs point, and the prefix of file URLs (`/api/storage/<storageId>`). */
export const STORAGE_PATH = "/api/storage/";
const UPLOAD_PATH = `${STORAGE_PATH}upload`;
/** The bucket key of the upload-URL signing secret. */
const SECRET_KEY = "storage-secret";
const SECRET_BYTES = 32;
const UPLOAD_ID_BYTES = 16;

/**
 * A node's file storage (functions/FileStorage.ts, storedFiles.ts): uploads streamed into
 * the bucket, downloads streamed out of it, with Range, from any node.
 *
 * - **Upload** (`POST /api/storage/upload?expires=…&nonce=…&signature=…`, the URL
 *   generateUploadUrl gave): the URL's signature and expiry are checked (UPLOAD_INVALID),
 *   then its Content-Length (required; over the limit FILE_TOO_LARGE, before any byte is
 *   read). The body is cut into FILE_CHUNK_BYTES objects as it arrives, hashed on the way,
 *   each chunk written before the next is read (memory: one chunk). Once all of it is in
 *   the bucket, the file's `_storage` document is committed and the answer is
 *   `{ storageId }`. A body shorter or longer than declared, a client gone mid-way, an
 *   upload slower than UPLOAD_DURATION_MS_MAX: refused, and the chunks written so far are
 *   deleted (the file collector takes any a crash leaves).
 * - **Download** (`GET`/`HEAD /api/storage/<storageId>`): the document is read at the
 *   node's frontier (404 FILE_NOT_FOUND for none); one byte range (`Range: bytes=…`, with
 *   If-Range) answers 206, anything else the whole file; the ETag is the SHA-256, and the
 *   URL's bytes never change (immutable caching). Chunks are read one at a time.
 * - **Actions**: `store(blob)` writes like an upload; `read(id)` returns the bytes.
 */
export class FileStore implements FileService {
  constructor(private readonly options: FileStoreOptions) {}

  uploadUrl(): string {
    const expires = this.options.clock.nowMs() + UPLOAD_URL_TTL_MS;
    const nonce = randomHex(this.options.random, 8);
    return `${this.base()}${UPLOAD_PATH.slice(1)}?expires=${expires}&nonce=${nonce}&signature=${this.sign(expires, nonce)}`;
  }

  fileUrl(id: DocumentId): string {
    return `${this.base()}${STORAGE_PATH.slice(1)}${id}`;
  }

  async store(blob: Blob, contentType: string | null): Promise<DocumentId> {
    if (blob.size > this.options.fileBytesMax) throw tooLarge(blob.size, this.options.fileBytesMax);
    return this.write(blob.stream() as unknown as AsyncIterable<Uint8Array>, blob.size, contentType);
  }

  async read(id: DocumentId): Promise<Blob | null> {
    const file = await this.file(id);
    if (file === null) return null;
    const parts: Uint8Array[] = [];
    for await (const part of this.bytes(file, 0, file.size - 1)) parts.push(part);
    return new Blob(parts, file.contentType !== undefined ? { type: file.contentType } : {});
  }

  /** Serves the storage routes; false for any other path. */
  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<boolean> {
    if (!path.startsWith(STORAGE_PATH)) return false;
    try {
      if (path === UPLOAD_PATH) {
        if (request.method !== "POST") return methodNotAllowed(response, "POST");
        await this.upload(request, response);
        return true;
      }
      if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed(response, "GET, HEAD");
      await this.download(request, response, path.slice(STORAGE_PATH.length));
    } catch (error) {
      if (response.headersSent) response.destroy(error as Error);
      else {
        // An upload refused before its body was read: the rest of it is not waited for.
        response.setHeader("connection", "close");
        sendError(response, error, this.options.log);
      }
    }
    return true;
  }

  private async upload(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://node");
    this.checkSignature(url.searchParams);
    const declared = request.headers["content-length"];
    if (declared === undefined || !/^\d+$/.test(declared)) {
      throw new CairnError("UPLOAD_INVALID", "an upload needs a Content-Length (the file's size in bytes)");
    }
    const size = Number(declared);
    if (size > this.options.fileBytesMax) throw tooLarge(size, this.options.fileBytesMax);
    const contentType = request.headers["content-type"] ?? null;
    const storageId = await this.write(request as AsyncIterable<Uint8Array>, size, contentType);
    sendJson(response, 200, { storageId });
  }

  /**
   * Writes `body` (exactly `size` bytes) as chunks of a new upload and commits its file's
   * document; on any failure deletes the chunks it wrote and throws.
   */
  private async write(body: AsyncIterable<Uint8Array>, size: number, contentType: string | null): Promise<DocumentId> {
    const { store, clock } = this.options;
    const upload = randomHex(this.options.random, UPLOAD_ID_BYTES);
    const startedMs = clock.monotonicMs();
    const hash = createHash("sha256");
    const written: string[] = [];
    // One buffer for every chunk: a chunk's write has returned (the store holds none of it) before the next is filled.
    const buffer = Buffer.allocUnsafe(Math.min(FILE_CHUNK_BYTES, Math.max(size, 1)));
    let chunk = buffer;
    let filled = 0;
    let total = 0;
    const durationMsMax = this.options.uploadDurationMsMax ?? UPLOAD_DURATION_MS_MAX;
    const inTime = () => {
      if (clock.monotonicMs() - startedMs > durationMsMax) {
        throw new CairnError("UPLOAD_INVALID", `the upload took longer than ${durationMsMax / 1000} s; nothing of it is kept`);
      }
    };
    const flush = async () => {
      const key = fileChunkKey(upload, written.length);
      written.push(key);
      await store.create(key, chunk.subarray(0, filled));
      inTime();
      // Every chunk but the last is FILE_CHUNK_BYTES: a download finds byte n in chunk n / FILE_CHUNK_BYTES.
      chunk = buffer.subarray(0, Math.min(FILE_CHUNK_BYTES, Math.max(size - written.length * FILE_CHUNK_BYTES, 1)));
      filled = 0;
    };
    try {
      try {
        for await (const piece of body) {
          total += piece.byteLength;
          if (total > size) throw new CairnError("UPLOAD_INVALID", `the body is longer than its declared ${size} bytes; nothing of it is kept`);
          hash.update(piece);
          let offset = 0;
          while (offset < piece.byteLength) {
            const taken = Math.min(piece.byteLength - offset, chunk.byteLength - filled);
            chunk.set(piece.subarray(offset, offset + taken), filled);
            filled += taken;
            offset += taken;
            if (filled === chunk.byteLength) await flush();
          }
        }
      } catch (error) {
        if (error instanceof CairnError) throw error;
        // The client went away mid-body: its fault, not the server's.
        throw new CairnError("UPLOAD_INVALID", `the upload ended before its ${size} bytes arrived; nothing of it is kept`, { cause: error });
      }
      if (total !== size) throw new CairnError("UPLOAD_INVALID", `the body has ${total} bytes, not its declared ${size}; nothing of it is kept`);
      if (filled > 0 || written.length === 0) await flush();
      // Once more before the commit: the body may have ended long after the last full chunk.
      inTime();
      const file = { sha256: hash.digest("hex"), size, upload, chunkBytes: FILE_CHUNK_BYTES, ...(contentType !== null ? { contentType } : {}) };
      const run = await this.options.backend.runMutation("_system:storeFile", file as unknown as Value, { identity: null, internal: true });
      return run.value as DocumentId;
    } catch (error) {
      // Whatever was written is nobody's: deleted now (the collector would, after its grace).
      await store.deleteMany(written).catch((cleanup: unknown) => this.options.log(`an abandoned upload's ${written.length} chunk(s) were not deleted (the file collector will): ${(cleanup as Error).message}`));
      throw error;
    }
  }

  private async download(request: IncomingMessage, response: ServerResponse, idText: string): Promise<void> {
    const file = await this.file(decodeURIComponent(idText) as DocumentId);
    if (file === null) throw new CairnError("FILE_NOT_FOUND", `no stored file ${idText}`, { details: { id: idText } });
    const etag = `"${file.sha256}"`;
    response.setHeader("etag", etag);
    response.setHeader("accept-ranges", "bytes");
    response.setHeader("cache-control", "public, max-age=31536000, immutable");
    response.setHeader("content-type", file.contentType ?? "application/octet-stream");
    response.setHeader("x-content-type-options", "nosniff");
    if (request.headers["if-none-match"] === etag) {
      response.writeHead(304);
      response.end();
      return;
    }
    const range = request.method === "GET" && ifRangeHolds(request.headers["if-range"], etag) ? byteRangeOf(request.headers.range, file.size) : { kind: "whole" as const };
    if (range.kind === "unsatisfiable") {
      response.removeHeader("etag");
      response.writeHead(416, { "content-range": `bytes */${file.size}`, "content-type": "text/plain; charset=utf-8" });
      response.end("range not satisfiable\n");
      return;
    }
    const [start, end] = range.kind === "slice" ? [range.start, range.end] : [0, file.size - 1];
    if (range.kind === "slice") response.writeHead(206, { "content-range": `bytes ${start}-${end}/${file.size}`, "content-length": end - start + 1 });
    else response.writeHead(200, { "content-length": file.size });
    if (request.method === "HEAD" || file.size === 0) {
      response.end();
      return;
    }
    for await (const part of this.bytes(file, start, end)) {
      if (response.destroyed) return;
      if (!response.write(part)) await drained(response);
    }
    response.end();
  }

  /** Bytes `start` to `end` (inclusive) of `file`, a chunk's share at a time. */
  private async *bytes(file: StoredFile, start: number, end: number): AsyncIterable<Uint8Array> {
    for (let index = Math.floor(start / file.chunkBytes); index * file.chunkBytes <= end; index++) {
      const key = fileChunkKey(file.upload, index);
      const got = await this.options.store.get(key);
      if (got === null || got === "not-modified") throw new CairnError("STORE_OBJECT_INVALID", `chunk ${key} of file ${file._id} is missing from the bucket`, { details: { key } });
      const first = index * file.chunkBytes;
      yield got.body.subarray(Math.max(0, start - first), Math.min(got.body.byteLength, end - first + 1));
    }
  }

  /** The file's document at the node's frontier, or null; FILE_NOT_FOUND for an id of another table. */
  private async file(id: DocumentId): Promise<StoredFile | null> {
    try {
      return this.options.runtime.storedFile(id);
    } catch (error) {
      if (hasErrorCode(error, "INVALID_ARGUMENT")) throw new CairnError("FILE_NOT_FOUND", `${String(id)} is not a stored file's id`, { cause: error, details: { id } });
      throw error;
    }
  }

  private checkSignature(params: URLSearchParams): void {
    const expires = Number(params.get("expires"));
    const nonce = params.get("nonce") ?? "";
    const signature = Buffer.from(params.get("signature") ?? "", "hex");
    const expected = Buffer.from(this.sign(expires, nonce), "hex");
    if (!Number.isSafeInteger(expires) || signature.byteLength !== expected.byteLength || !timingSafeEqual(signature, expected)) {
      throw new CairnError("UPLOAD_INVALID", "this upload URL is not one the deployment made (get one from ctx.storage.generateUploadUrl())");
    }
    if (expires < this.options.clock.nowMs()) throw new CairnError("UPLOAD_INVALID", "this upload URL has expired (they last an hour): get a new one");
  }

  private sign(expires: number, nonce: string): string {
    return createHmac("sha256", this.options.secret).update(`${expires}:${nonce}`).digest("hex");
  }

  private base(): string {
    const base = this.options.baseUrl();
    if (base === null) throw new CairnError("FILE_STORAGE_UNAVAILABLE", "the node is not listening yet: it has no URL to give");
    return base.endsWith("/") ? base : `${base}/`;
  }
}

/** The deployment's upload-URL signing key: made once by the first node that needs it, read by every other. */
export async function fileUploadSecret(store: ObjectStore, random: Random): Promise<Uint8Array> {
  for (;;) {
    const existing = await store.get(SECRET_KEY);
    if (existing !== null && existing !== "not-modified") {
      if (existing.body.byteLength !== SECRET_BYTES) throw new CairnError("STORE_OBJECT_INVALID", `${SECRET_KEY} is not a ${SECRET_BYTES}-byte key`);
      return existing.body;
    }
    try {
      const secret = random.bytes(SECRET_BYTES);
      await store.create(SECRET_KEY, secret);
      return secret;
    } catch (error) {
      // Another node made it first: read theirs.
      if (!isCasConflict(error) && !hasErrorCode(error, "CAS_CONFLICT")) throw error;
    }
  }
}

function tooLarge(size: number, limit: number): CairnError {
  return new CairnError("FILE_TOO_LARGE", `a file of ${size} bytes is over this deployment's limit of ${limit} bytes; nothing of it is kept`, { details: { size, limit } });
}

function methodNotAllowed(response: ServerResponse, allow: string): true {
  response.writeHead(405, { allow, "content-type": "text/plain; charset=utf-8" });
  response.end("method not allowed\n");
  return true;
}
