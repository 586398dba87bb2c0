import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { CairnError } from "../base/index.js";
import { App } from "./App.js";
import { appImports, bundleFailed } from "./appBundle.js";

/**
 * Loads an app from a TypeScript (or JavaScript) module file. The app's own files are
 * compiled and bundled by esbuild into one module (Cairn and packages stay shared, see
 * appImports), written to a fresh temporary file, imported and the file removed: every
 * load evaluates the app's code afresh, which is how `cairn dev` reloads it, and no
 * TypeScript loader is needed. Type errors are not checked here (`cairn dev` runs tsc).
 * APP_LOAD_FAILED names the file and what went wrong (missing, a syntax or import error
 * with file:line:column, a throw while it is evaluated); SCHEMA_INVALID what is
 * inconsistent.
 */
export async function loadApp(path: string): Promise<App> {
  const file = resolve(path);
  if (!existsSync(file)) throw new CairnError("APP_LOAD_FAILED", `app ${file}: no such file`, { details: { file } });
  const directory = mkdtempSync(join(tmpdir(), "cairn-app-"));
  const outfile = join(directory, "app.mjs");
  try {
    let code: Uint8Array;
    try {
      const result = await build({
        entryPoints: [file],
        outfile,
        bundle: true,
        format: "esm",
        platform: "node",
        target: "node20",
        // Stack traces of the app's errors point at its sources (with --enable-source-maps / process.setSourceMapsEnabled).
        sourcemap: "inline",
        write: false,
        logLevel: "silent",
        plugins: [appImports("node")],
      });
      code = result.outputFiles[0]!.contents;
    } catch (error) {
      throw bundleFailed(`app ${file} failed to compile`, error);
    }
    writeFileSync(outfile, code);
    let module: unknown;
    try {
      module = await import(pathToFileURL(outfile).href);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new CairnError("APP_LOAD_FAILED", `app ${file} failed to load: ${message}`, { cause: error, details: { file } });
    }
    return App.fromModule(module, file);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
