import { existsSync } from "node:fs";
import { builtinModules } from "node:module";
import { sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";
import { CairnError } from "../base/index.js";

/**
 * The package's public entry points (package.json "exports"), as files of the running
 * Cairn: the compiled ones in the published package, the TypeScript sources in a
 * checkout run through tsx. An app's `import … from "cairn"` is pointed at these, not at
 * whatever copy of Cairn the app's folder holds, so that the app and the server share one
 * instance of every module (a schema made by another copy's defineSchema is not this
 * server's). Named here, below the package layer that holds them, as files, not imports.
 */
const OWN_EXTENSION = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
const ENTRY_FILES: Readonly<Record<string, string>> = {
  cairn: "index",
  "cairn/client": "client",
  "cairn/client/node": "clientNode",
  "cairn/react": "react",
  "cairn/server": "server",
};

/** The file of entry point `specifier` ("cairn", "cairn/client", …) in the running Cairn, or null if it has none by that name. */
export function packageEntryFile(specifier: string): string | null {
  const name = ENTRY_FILES[specifier];
  return name === undefined ? null : fileURLToPath(new URL(`../package/${name}${OWN_EXTENSION}`, import.meta.url));
}

/** Cairn's own code (src/ in a checkout, dist/ in the package): never bundled into an app, always shared. */
const OWN_CODE_DIRECTORY = fileURLToPath(new URL("..", import.meta.url));

const TYPESCRIPT = /\.[cm]?tsx?$/;

/**
 * An esbuild plugin for bundling an app's own code while everything else stays shared
 * with the running server: `cairn` and `cairn/*` resolve to the running Cairn's entry
 * points (above); Node's built-ins, packages' JavaScript in node_modules and Cairn's own
 * code stay external, imported by absolute URL (so the bundle runs from any directory);
 * the app's TypeScript and JavaScript, wherever it lives, is bundled — a reload then
 * evaluates all of it afresh. `platform` "browser" bundles packages too (a page has no
 * node_modules to import from) but still maps `cairn/*`.
 */
export function appImports(platform: "node" | "browser"): Plugin {
  return {
    name: "cairn-app-imports",
    setup(build) {
      build.onResolve({ filter: /^cairn(\/.*)?$/ }, (args) => {
        const file = packageEntryFile(args.path);
        if (file === null) {
          return { errors: [{ text: `"${args.path}" is not an entry point of cairn (it has ${Object.keys(ENTRY_FILES).join(", ")})` }] };
        }
        if (!existsSync(file)) return { errors: [{ text: `"${args.path}" is missing from this installation of cairn (${file})` }] };
        return platform === "node" ? { path: pathToFileURL(file).href, external: true } : { path: file };
      });
      if (platform === "browser") return;
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData === RESOLVING) return undefined;
        const bare = args.path.startsWith("node:") ? args.path.slice(5) : args.path;
        if (builtinModules.includes(bare)) return { path: args.path, external: true };
        const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: RESOLVING });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        const file = resolved.path;
        const inPackage = file.split(sep).includes("node_modules") && !TYPESCRIPT.test(file);
        if (resolved.external || inPackage || file.startsWith(OWN_CODE_DIRECTORY)) return { path: pathToFileURL(file).href, external: true };
        return { path: file };
      });
    },
  };
}

const RESOLVING = Symbol("resolving");

/** Turns esbuild's failure into APP_LOAD_FAILED listing each error as file:line:column. */
export function bundleFailed(what: string, error: unknown): CairnError {
  const errors = (error as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors;
  const lines =
    errors !== undefined && errors.length > 0
      ? errors.map((problem) => (problem.location ? `${problem.location.file}:${problem.location.line}:${problem.location.column + 1}: ${problem.text}` : problem.text))
      : [error instanceof Error ? error.message : String(error)];
  return new CairnError("APP_LOAD_FAILED", `${what}:\n  ${lines.join("\n  ")}`, { cause: error, details: { errors: lines } });
}
