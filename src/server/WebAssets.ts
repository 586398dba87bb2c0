import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { CairnError } from "../base/index.js";

/** A browser app the server serves at `/`: its HTML page and the script it loads as /app.js. */
export interface WebApp {
  readonly htmlPath: string;
  /** The page's module script (TypeScript), bundled with the client library by esbuild. */
  readonly entryPath: string;
}

export interface WebAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

const CLIENT_ENTRY = fileURLToPath(new URL("../client/index.ts", import.meta.url));

/**
 * The static files of the server, built in memory at startup: `/cairn-client.js` (the
 * client library as one ES module, for any page) and, when a web app is given, `/` and
 * `/app.js`. Without one, `/` is a page saying what the server serves and how to reach it.
 * Bundled for the browser platform, so a Node-only import in the client fails the build
 * (and the server's startup) instead of a page at runtime.
 */
export async function buildWebAssets(webApp: WebApp | null, describe: () => string): Promise<Map<string, WebAsset>> {
  const assets = new Map<string, WebAsset>();
  assets.set("/cairn-client.js", { contentType: "text/javascript; charset=utf-8", body: await bundle(CLIENT_ENTRY) });
  if (webApp === null) {
    assets.set("/", { contentType: "text/html; charset=utf-8", body: Buffer.from(describe()) });
    return assets;
  }
  assets.set("/", { contentType: "text/html; charset=utf-8", body: readFileSync(webApp.htmlPath) });
  assets.set("/app.js", { contentType: "text/javascript; charset=utf-8", body: await bundle(webApp.entryPath) });
  return assets;
}

/** Bundles built in this process, by entry: the sources do not change while it runs. */
const bundles = new Map<string, Promise<Buffer>>();

function bundle(entry: string): Promise<Buffer> {
  let built = bundles.get(entry);
  if (built === undefined) {
    built = buildBundle(entry);
    bundles.set(entry, built);
    built.catch(() => bundles.delete(entry));
  }
  return built;
}

async function buildBundle(entry: string): Promise<Buffer> {
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      minify: true,
      write: false,
      logLevel: "silent",
    });
    return Buffer.from(result.outputFiles[0]!.contents);
  } catch (error) {
    throw new CairnError("APP_LOAD_FAILED", `cannot bundle ${entry} for the browser: ${(error as Error).message}`, { cause: error });
  }
}
