import { dirname } from "node:path";
import { build } from "esbuild";
import { CairnError } from "../base/index.js";
import { appImports } from "../functions/index.js";

/**
 * `entry` bundled with what it imports into one minified ES module for browsers (or,
 * for a stylesheet, one stylesheet). A script imports the client as an app would, from
 * "cairn/client" (appImports maps it onto the running Cairn's entry). Bundling for the
 * browser platform makes a Node-only import fail here, at build time, not in a page.
 * `jsxImportSource`: JSX with that library's automatic runtime (the dashboard's Preact).
 * APP_LOAD_FAILED naming `what` when it does not build.
 */
export async function browserBundle(entry: string, what: string, options: { readonly jsxImportSource?: string } = {}): Promise<Buffer> {
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      minify: true,
      ...(options.jsxImportSource !== undefined ? { jsx: "automatic" as const, jsxImportSource: options.jsxImportSource } : {}),
      plugins: entry.endsWith(".css") ? [] : [appImports("browser")],
      write: false,
      logLevel: "silent",
      // Packages the entry imports resolve from its own folder (a checkout's node_modules).
      absWorkingDir: dirname(entry),
    });
    return Buffer.from(result.outputFiles[0]!.contents);
  } catch (error) {
    throw new CairnError("APP_LOAD_FAILED", `cannot bundle ${what} (${entry}) for the browser: ${(error as Error).message}`, { cause: error });
  }
}
