import { once } from "node:events";
import { createReadStream, createWriteStream, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import yauzl from "yauzl";
import yazl from "yazl";
import { CairnError } from "../base/index.js";

/**
 * ZIP archives for `cairn export --to x.zip` and `cairn import --from x.zip` (a Convex
 * export's default form), streamed both ways with well-kept libraries (yazl, yauzl): one
 * file's bytes in memory at a time, never the archive.
 *
 * Unzipping refuses an entry whose path would land outside the folder (absolute, or with
 * `..`: a "zip slip") and anything that is not a plain file or folder, with
 * IMPORT_INVALID, before it writes that entry.
 */

/** Whether a path names a ZIP archive (by its extension: what `--to`/`--from` go by). */
export function isZipPath(path: string): boolean {
  return path.toLowerCase().endsWith(".zip");
}

/** Writes every file under `folder` into a new ZIP at `zipPath` (via a `.partial` file renamed at the end). */
export async function zipFolder(folder: string, zipPath: string): Promise<void> {
  const partial = `${zipPath}.partial`;
  const zip = new yazl.ZipFile();
  const written = pipeline(zip.outputStream, createWriteStream(partial, { flags: "wx" }));
  try {
    for (const file of filesUnder(folder)) zip.addReadStream(createReadStream(join(folder, file)), file.split(sep).join("/"));
    zip.end();
    await written;
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
  renameSync(partial, zipPath);
}

function filesUnder(folder: string, prefix = ""): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(folder, prefix), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(prefix, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(folder, path));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/** Extracts the ZIP at `zipPath` into `folder` (which must exist and be empty). */
export async function unzipToFolder(zipPath: string, folder: string): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(zipPath, { lazyEntries: true, strictFileNames: true }, (error, opened) => (error ? reject(error) : resolve(opened))));
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${zipPath} is not a readable ZIP archive (${error instanceof Error ? error.message : String(error)}); nothing was imported`, { cause: error });
  }
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on("error", (error: Error) => reject(new CairnError("IMPORT_INVALID", `${zipPath} is damaged (${error.message}); nothing was imported`, { cause: error })));
      zip.on("end", () => resolve());
      zip.on("entry", (entry: yauzl.Entry) => {
        extract(zip, entry, folder, zipPath).then(
          () => zip.readEntry(),
          (error: unknown) => reject(error),
        );
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

async function extract(zip: yauzl.ZipFile, entry: yauzl.Entry, folder: string, zipPath: string): Promise<void> {
  const name = entry.fileName;
  const target = normalize(join(folder, name));
  const inside = relative(folder, target);
  if (isAbsolute(name) || inside.startsWith("..") || isAbsolute(inside)) {
    throw new CairnError("IMPORT_INVALID", `${zipPath} holds an entry outside its folder (${name}); nothing was imported`, { details: { entry: name } });
  }
  if (name.endsWith("/")) {
    mkdirSync(target, { recursive: true });
    return;
  }
  const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
  if (mode !== 0 && mode !== 0o100000) {
    throw new CairnError("IMPORT_INVALID", `${zipPath} holds ${name}, which is not a plain file; nothing was imported`, { details: { entry: name } });
  }
  mkdirSync(dirname(target), { recursive: true });
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => zip.openReadStream(entry, (error, opened) => (error ? reject(error) : resolve(opened))));
  const out = createWriteStream(target, { flags: "wx" });
  try {
    await pipeline(stream, out);
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${zipPath}: ${name} cannot be read (${error instanceof Error ? error.message : String(error)}); nothing was imported`, { cause: error });
  } finally {
    if (!out.closed) await once(out, "close").catch(() => undefined);
  }
}
