import type { Transform } from "node:stream";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { constants, createBrotliCompress, createGzip } from "node:zlib";

/** The encodings the server compresses to, best first: brotli is ~15–20% smaller than gzip on scripts. */
export const CONTENT_ENCODINGS = ["br", "gzip"] as const;
export type ContentEncoding = (typeof CONTENT_ENCODINGS)[number];

/**
 * Compression levels: "built" variants are written once by `cairn build` beside the file
 * (precompressedFiles), so they take the best levels (brotli 11, gzip 9: about a second
 * for 1 MB of script, 7–13% smaller than brotli 9 on the starter app's bundle and on
 * typescript.js); "stored" ones are compressed once
 * per process and kept (StaticFiles' cache, the built-in scripts), so they take the slow,
 * small levels that still answer a first request quickly (brotli 9 and gzip 9 compress a
 * 1 MB script in well under a second); "streamed" ones are compressed on every request
 * while being sent, so they take fast levels that still get most of the gain.
 */
export type CompressionEffort = "built" | "stored" | "streamed";

const BROTLI_QUALITY: Readonly<Record<CompressionEffort, number>> = { built: constants.BROTLI_MAX_QUALITY, stored: 9, streamed: 4 };
const GZIP_LEVEL: Readonly<Record<CompressionEffort, number>> = { built: 9, stored: 9, streamed: 6 };

/**
 * The encoding to send given the request's `Accept-Encoding`: the best of ours it accepts
 * (a q-value of 0 refuses one), or null for the body as it is.
 */
export function preferredEncoding(acceptEncoding: string | undefined): ContentEncoding | null {
  return acceptedEncodings(acceptEncoding)[0] ?? null;
}

/** The encodings of ours the request's `Accept-Encoding` accepts, best first (empty: the body as it is). */
export function acceptedEncodings(acceptEncoding: string | undefined): ContentEncoding[] {
  if (acceptEncoding === undefined) return [];
  const accepted = new Map<string, number>();
  for (const part of acceptEncoding.split(",")) {
    const [name, ...parameters] = part.trim().toLowerCase().split(";");
    const quality = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/.exec(parameter)).find((match) => match !== null);
    accepted.set(name!.trim(), quality ? Number(quality[1]) : 1);
  }
  const wildcard = accepted.get("*");
  return CONTENT_ENCODINGS.filter((encoding) => (accepted.get(encoding) ?? wildcard ?? 0) > 0);
}

/** A stream that compresses what is written to it. */
export function compressor(encoding: ContentEncoding, effort: CompressionEffort, sizeHint?: number): Transform {
  switch (encoding) {
    case "br":
      return createBrotliCompress({
        params: {
          [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY[effort],
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          ...(sizeHint !== undefined ? { [constants.BROTLI_PARAM_SIZE_HINT]: sizeHint } : {}),
        },
      });
    case "gzip":
      return createGzip({ level: GZIP_LEVEL[effort] });
  }
}

/** Everything `source` yields, compressed (for a variant that is kept). */
export async function compressAll(source: NodeJS.ReadableStream | Buffer, encoding: ContentEncoding, sizeHint?: number, effort: CompressionEffort = "stored"): Promise<Buffer> {
  const compressing = compressor(encoding, effort, sizeHint);
  const collected = buffer(compressing);
  if (Buffer.isBuffer(source)) {
    compressing.end(source);
    return collected;
  }
  const [, compressed] = await Promise.all([pipeline(source, compressing), collected]);
  return compressed;
}
