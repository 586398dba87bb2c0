import type { Transform } from "node:stream";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { constants, createBrotliCompress, createGzip } from "node:zlib";

/** The encodings the server compresses to, best first: brotli is ~15–20% smaller than gzip on scripts. */
export const CONTENT_ENCODINGS = ["br", "gzip"] as const;
export type ContentEncoding = (typeof CONTENT_ENCODINGS)[number];

/**
 * Compression levels: "stored" variants are compressed once and kept (StaticFiles' cache,
 * the built-in scripts), so they take the slow, small levels (brotli 9 and gzip 9 compress
 * a 1 MB script in well under a second); "streamed" ones are compressed on every request
 * while being sent, so they take fast levels that still get most of the gain.
 */
export type CompressionEffort = "stored" | "streamed";

/**
 * The encoding to send given the request's `Accept-Encoding`: the best of ours it accepts
 * (a q-value of 0 refuses one), or null for the body as it is.
 */
export function preferredEncoding(acceptEncoding: string | undefined): ContentEncoding | null {
  if (acceptEncoding === undefined) return null;
  const accepted = new Map<string, number>();
  for (const part of acceptEncoding.split(",")) {
    const [name, ...parameters] = part.trim().toLowerCase().split(";");
    const quality = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/.exec(parameter)).find((match) => match !== null);
    accepted.set(name!.trim(), quality ? Number(quality[1]) : 1);
  }
  const wildcard = accepted.get("*");
  return CONTENT_ENCODINGS.find((encoding) => (accepted.get(encoding) ?? wildcard ?? 0) > 0) ?? null;
}

/** A stream that compresses what is written to it. */
export function compressor(encoding: ContentEncoding, effort: CompressionEffort, sizeHint?: number): Transform {
  switch (encoding) {
    case "br":
      return createBrotliCompress({
        params: {
          [constants.BROTLI_PARAM_QUALITY]: effort === "stored" ? 9 : 4,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          ...(sizeHint !== undefined ? { [constants.BROTLI_PARAM_SIZE_HINT]: sizeHint } : {}),
        },
      });
    case "gzip":
      return createGzip({ level: effort === "stored" ? 9 : 6 });
  }
}

/** Everything `source` yields, compressed (for a variant that is kept). */
export async function compressAll(source: NodeJS.ReadableStream | Buffer, encoding: ContentEncoding, sizeHint?: number): Promise<Buffer> {
  const compressing = compressor(encoding, "stored", sizeHint);
  const collected = buffer(compressing);
  if (Buffer.isBuffer(source)) {
    compressing.end(source);
    return collected;
  }
  const [, compressed] = await Promise.all([pipeline(source, compressing), collected]);
  return compressed;
}
