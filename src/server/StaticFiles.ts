import { constants } from "node:fs";
import { open, realpath, stat, type FileHandle } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { CairnError, STATIC_COMPRESS_BYTES_MIN, STATIC_COMPRESS_CACHED_FILE_BYTES_MAX, STATIC_COMPRESSED_CACHE_BYTES_MAX } from "../base/index.js";
import { CompressedVariants } from "./CompressedVariants.js";
import { byteRangeOf, ifRangeHolds, type ByteRange } from "./byteRange.js";
import { acceptedEncodings, compressAll, compressor, type ContentEncoding } from "./contentEncoding.js";
import { contentTypeOf, isCompressible } from "./contentTypes.js";
import { appendVary, cacheControlFor, notModified } from "./httpCaching.js";
import { PRECOMPRESSED_SUFFIX } from "./precompressedFiles.js";
import { staticSegments } from "./staticSegments.js";

/** A file found for a request: opened, so that what is sent is what was checked. */
interface OpenFile {
  readonly handle: FileHandle;
  readonly realPath: string;
  readonly size: number;
  readonly mtimeMs: number;
}

/** A file's copy compressed at build time (`<file>.br`), opened. */
interface PrecompressedCopy {
  readonly encoding: ContentEncoding;
  readonly file: OpenFile;
}

const WHOLE_FILE: ByteRange = { kind: "whole" };

const INDEX = "index.html";
/** Opened without following a symlink in the last component: the path was resolved (realpath) and checked already. */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

/**
 * A built web app's directory (`--static <dir>`, vite's dist/) served over HTTP, behind
 * Cairn's own routes (CairnServer asks it only for paths the API and the built-in assets
 * did not take).
 *
 * - GET and HEAD only (405 otherwise). A path reaches only files inside the directory:
 *   staticSegments refuses dot segments, encoded separators, NUL and hidden names, and a
 *   file whose real path (symlinks resolved) is outside the directory is not found.
 * - A directory serves its index.html. A path with no file, no extension and a request
 *   that accepts text/html (a browser navigating inside a single-page app) gets the root
 *   index.html with 200; any other miss (`/assets/gone-1a2b3c4d.js`) is a 404.
 * - Files are streamed from an open handle, never read whole. Compressible ones of at
 *   least STATIC_COMPRESS_BYTES_MIN go out as brotli or gzip when the client accepts it,
 *   with `Vary: Accept-Encoding`: the copy `cairn build` wrote beside the file
 *   (`<file>.br`, `<file>.gz`; precompressedFiles) when there is one at least as new as
 *   the file, else compressed here and kept in memory (at most
 *   STATIC_COMPRESSED_CACHE_BYTES_MAX), except for files over
 *   STATIC_COMPRESS_CACHED_FILE_BYTES_MAX, compressed while they are sent. A copy asked for
 *   by its own name (`/assets/main.js.br`) is bytes (`application/octet-stream`, no
 *   Content-Encoding): never taken for the script it compresses.
 * - A GET's single byte range (`Range: bytes=…`, byteRange) gets a 206 of that slice of the
 *   file as it is (a ranged answer is never compressed), read from the file, not whole; a
 *   range past the end a 416; an If-Range that does not name the file's current ETag, a
 *   malformed Range or several ranges the full 200. Full answers of the bytes as they are
 *   carry `Accept-Ranges: bytes`; compressed ones do not offer ranges.
 * - Every answer has an ETag from the file's size and modification time (a redeploy
 *   changes it): strong for the bytes as they are, weak and distinct per encoding for a
 *   compressed answer; an If-None-Match that names it gets a 304. Fingerprinted names (a
 *   content hash, as bundlers emit) are cached for a year as immutable; index.html and
 *   the rest are revalidated each time (`no-cache`).
 */
export class StaticFiles {
  private readonly variants = new CompressedVariants(STATIC_COMPRESSED_CACHE_BYTES_MAX);

  private constructor(
    /** The directory's real path (symlinks resolved): every file served is under it. */
    readonly directory: string,
  ) {}

  /** The directory, checked: INVALID_ARGUMENT if it does not exist, is not a directory or has no index.html. */
  static async open(directory: string): Promise<StaticFiles> {
    let root: string;
    try {
      root = await realpath(resolve(directory));
    } catch {
      throw new CairnError("INVALID_ARGUMENT", `the static directory ${directory} does not exist`);
    }
    if (!(await stat(root)).isDirectory()) throw new CairnError("INVALID_ARGUMENT", `the static directory ${directory} is not a directory`);
    const index = await stat(join(root, INDEX)).catch(() => null);
    if (index === null || !index.isFile()) {
      throw new CairnError("INVALID_ARGUMENT", `the static directory ${directory} has no ${INDEX}: give the directory your build writes (e.g. vite's dist/, after \`npm run build\`)`);
    }
    return new StaticFiles(root);
  }

  /** Bytes of compressed variants held in memory now. */
  get compressedBytesHeld(): number {
    return this.variants.bytes;
  }

  /** Answers a request for `path` (the URL path as pathOf gives it: dot segments resolved, still percent-encoded). */
  async serve(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
      response.end("use GET or HEAD\n");
      return;
    }
    const segments = staticSegments(path);
    let file = segments === null ? null : await this.find(segments);
    if (file === null && segments !== null && isPageNavigation(request, segments)) file = await this.find([INDEX]);
    if (file === null) {
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" });
      response.end("not found\n");
      return;
    }
    await this.send(request, response, file);
  }

  /** The file `segments` name inside the directory (a directory's index.html), opened; null if there is none. */
  private async find(segments: readonly string[]): Promise<OpenFile | null> {
    const found = await this.openInside(join(this.directory, ...segments));
    if (found === null || found !== "directory") return found;
    const index = await this.openInside(join(this.directory, ...segments, INDEX));
    return index === "directory" ? null : index;
  }

  private async openInside(path: string): Promise<OpenFile | "directory" | null> {
    let realPath: string;
    try {
      realPath = await realpath(path);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    // A symlink may point anywhere: only what it resolves to inside the directory is served.
    if (realPath !== this.directory && !realPath.startsWith(this.directory + sep)) return null;
    let handle: FileHandle;
    try {
      handle = await open(realPath, OPEN_FLAGS);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    const stats = await handle.stat().catch(async (error: unknown) => {
      await handle.close();
      throw error;
    });
    if (stats.isFile()) return { handle, realPath, size: stats.size, mtimeMs: stats.mtimeMs };
    await handle.close();
    return stats.isDirectory() ? "directory" : null;
  }

  /**
   * Sends `file` as the request asks: a 304 when its ETag matches, a 206 or 416 for a
   * Range, else the whole file — a precompressed copy, compressed, or as it is. Owns the
   * handles it is given: each is closed here, or by the read stream that took it over.
   */
  private async send(request: IncomingMessage, response: ServerResponse, file: OpenFile): Promise<void> {
    const streamed = new Set<FileHandle>();
    const streamOf = (source: OpenFile, slice?: { start: number; end: number }) => {
      streamed.add(source.handle);
      return source.handle.createReadStream(slice);
    };
    let copy: PrecompressedCopy | null = null;
    try {
      const contentType = contentTypeOf(file.realPath);
      const compressible = isCompressible(contentType) && file.size >= STATIC_COMPRESS_BYTES_MIN;
      const version = `${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}`;
      // Strong for the bytes as they are (If-Range compares strongly); weak for an encoding,
      // whose bytes depend on the compressor, distinct per encoding so a 304 never confirms another one.
      const identityTag = `"${version}"`;
      response.setHeader("content-type", contentType);
      response.setHeader("cache-control", cacheControlFor(file.realPath));
      if (compressible) appendVary(response, "Accept-Encoding");
      // Range is defined for GET only: RFC 9110 §14.2 has a server ignore it on HEAD, whose
      // answer is the full GET's headers. A range is of the bytes as they are, never of a compressed body.
      const range = request.method === "GET" && ifRangeHolds(request.headers["if-range"], identityTag) ? byteRangeOf(request.headers.range, file.size) : WHOLE_FILE;
      const encodings = compressible && range.kind === "whole" ? acceptedEncodings(request.headers["accept-encoding"]) : [];
      copy = encodings.length === 0 ? null : await this.precompressedCopy(file, encodings);
      const encoding = copy?.encoding ?? encodings[0] ?? null;
      const etag = encoding === null ? identityTag : `W/"${version}-${encoding}"`;
      response.setHeader("etag", etag);
      if (notModified(request, etag)) {
        response.writeHead(304);
        response.end();
        return;
      }
      const head = request.method === "HEAD";
      if (range.kind === "unsatisfiable") {
        response.removeHeader("etag");
        response.writeHead(416, { "content-range": `bytes */${file.size}`, "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" });
        return void response.end("range not satisfiable\n");
      }
      if (range.kind === "slice") {
        response.writeHead(206, { "accept-ranges": "bytes", "content-range": `bytes ${range.start}-${range.end}/${file.size}`, "content-length": range.end - range.start + 1 });
        return await sent(pipeline(streamOf(file, range), response));
      }
      if (encoding === null) {
        // Only the bytes as they are are offered in ranges: a client resuming a compressed body would splice two encodings.
        response.writeHead(200, { "accept-ranges": "bytes", "content-length": file.size });
        if (head) return void response.end();
        return await sent(pipeline(streamOf(file), response));
      }
      response.setHeader("content-encoding", encoding);
      if (copy !== null) {
        response.writeHead(200, { "content-length": copy.file.size });
        if (head) return void response.end();
        return await sent(pipeline(streamOf(copy.file), response));
      }
      if (file.size > STATIC_COMPRESS_CACHED_FILE_BYTES_MAX) {
        response.writeHead(200);
        if (head) return void response.end();
        return await sent(pipeline(streamOf(file), compressor(encoding, "streamed"), response));
      }
      const key = `${file.realPath}\0${etag}`;
      const body = await this.variants.get(key, () => compressAll(streamOf(file), encoding, file.size));
      response.writeHead(200, { "content-length": body.byteLength });
      response.end(head ? undefined : body);
    } catch (error) {
      // The error answer must not go out with this file's headers (a JSON error "encoded" as brotli).
      if (!response.headersSent) for (const name of response.getHeaderNames()) response.removeHeader(name);
      throw error;
    } finally {
      // A read stream closes its handle when it ends or fails; an unread handle is closed here.
      for (const opened of [file, copy?.file]) if (opened !== undefined && !streamed.has(opened.handle)) await opened.handle.close();
    }
  }

  /**
   * The first of `encodings` (best first) whose precompressed copy (`<file>.br`, written by
   * `cairn build`) is a file inside the directory at least as new as `file`, opened; null
   * if none is (the file is then compressed here). An older copy is of an older file.
   */
  private async precompressedCopy(file: OpenFile, encodings: readonly ContentEncoding[]): Promise<PrecompressedCopy | null> {
    for (const encoding of encodings) {
      const found = await this.openInside(file.realPath + PRECOMPRESSED_SUFFIX[encoding]);
      if (found === null || found === "directory") continue;
      if (found.mtimeMs >= file.mtimeMs) return { encoding, file: found };
      await found.handle.close();
    }
    return null;
  }
}

/** A browser navigating to a route of a single-page app: no extension, and HTML accepted. */
function isPageNavigation(request: IncomingMessage, segments: readonly string[]): boolean {
  const last = segments.at(-1);
  if (last !== undefined && extname(last) !== "") return false;
  return (request.headers.accept ?? "").toLowerCase().includes("text/html");
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "EACCES" || code === "ELOOP" || code === "ENAMETOOLONG";
}

/** A body being streamed: a client that went away mid-body ends it, which is no failure of the server's. */
async function sent(streaming: Promise<void>): Promise<void> {
  await streaming.catch(() => undefined);
}
