import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { STATIC_COMPRESS_BYTES_MIN } from "../base/index.js";
import { compressAll, CONTENT_ENCODINGS, type ContentEncoding } from "./contentEncoding.js";
import { contentTypeOf, isCompressible } from "./contentTypes.js";

/**
 * Compressed copies of a built app's files, written once at build time beside each file
 * (`assets/main-5XK2Q3AB.js.br`, `.gz`) so that the server sends them without compressing
 * anything (StaticFiles looks for them before compressing on the fly). The same names
 * nginx's gzip_static/brotli_static and most CDNs' origin setups use, so a build served
 * by another server keeps the gain.
 *
 * A copy is for the file as it was when the copy was written: StaticFiles takes it only
 * when it is at least as new as the file (a file rewritten by hand after the build gets
 * compressed on the fly, never answered with its old content).
 */
export const PRECOMPRESSED_SUFFIX: Readonly<Record<ContentEncoding, string>> = { br: ".br", gzip: ".gz" };

const SUFFIXES: readonly string[] = Object.values(PRECOMPRESSED_SUFFIX);

/**
 * Writes `<file>.br` and `<file>.gz` beside every compressible file of `directory` (and
 * its subdirectories) of at least STATIC_COMPRESS_BYTES_MIN — the files StaticFiles would
 * compress — at the best levels; a copy that would not be smaller than the file is not
 * written. Returns the copies written, relative to `directory`. Symlinks are not followed:
 * a build's own files are regular files.
 */
export async function writePrecompressedFiles(directory: string): Promise<string[]> {
  const written: string[] = [];
  for (const name of await regularFilesUnder(directory)) {
    if (SUFFIXES.some((suffix) => name.endsWith(suffix)) || !isCompressible(contentTypeOf(name))) continue;
    const path = join(directory, name);
    if ((await stat(path)).size < STATIC_COMPRESS_BYTES_MIN) continue;
    const content = await readFile(path);
    for (const encoding of CONTENT_ENCODINGS) {
      const compressed = await compressAll(content, encoding, content.byteLength, "built");
      if (compressed.byteLength >= content.byteLength) continue;
      await writeFile(path + PRECOMPRESSED_SUFFIX[encoding], compressed);
      written.push(name + PRECOMPRESSED_SUFFIX[encoding]);
    }
  }
  return written;
}

/** The regular files under `directory`, relative to it, sorted; symlinks are not followed. */
async function regularFilesUnder(directory: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(join(directory, prefix), { withFileTypes: true })) {
    const name = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) files.push(...(await regularFilesUnder(directory, name)));
    else if (entry.isFile()) files.push(name);
  }
  return files.sort();
}
