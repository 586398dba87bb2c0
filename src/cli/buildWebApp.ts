import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { build, type Metafile } from "esbuild";
import { CairnError } from "../base/index.js";
import { appImports, bundleFailed } from "../functions/index.js";
import { writePrecompressedFiles } from "../server/index.js";

/** What a build of an app's page wrote. */
export interface WebBuild {
  /** The scripts and styles written, relative to the output directory ("assets/main-5XK2Q3.js"). */
  readonly assets: readonly string[];
  /** Every source file the bundles read (absolute paths): a change to one of them calls for a rebuild. */
  readonly inputs: readonly string[];
  /** The compressed copies written beside the files (`assets/main-5XK2Q3.js.br`), when asked for. */
  readonly precompressed: readonly string[];
}

export interface WebBuildOptions {
  readonly minify: boolean;
  /**
   * Write `<file>.br` and `<file>.gz` beside each compressible file of at least 1 KiB, at
   * the best levels, for the server to send as they are. For production builds: brotli's
   * best level takes about a second per MB, too slow for `cairn dev`'s rebuilds.
   */
  readonly precompress?: boolean;
}

/** `<script type="module" src="./main.ts">` (attributes in any order): a page's entry scripts. */
const MODULE_SCRIPT = /<script\b(?=[^>]*\btype=["']module["'])[^>]*\bsrc=["']([^"']+)["'][^>]*>\s*<\/script>/gi;
const SOURCE_ENTRY = /\.(m?[jt]sx?)$/;
/** Files a script may import as a URL (esbuild copies them under assets/ with a hash in the name). */
const FILE_LOADERS = Object.fromEntries([".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf"].map((extension) => [extension, "file" as const]));

/**
 * Builds an app's page: `<web>/index.html` with its module scripts (TypeScript or
 * JavaScript, React's JSX too) bundled by esbuild for browsers — `cairn/client` and
 * `cairn/react` resolving to this Cairn — into `<out>/assets/<name>-<hash>.js` (and the
 * CSS they import into a `.css` beside it), the page rewritten to load them, and
 * `<web>/public/` copied as is. Hashed names let the server mark them immutable
 * (`cairn serve --static <out>`); the page itself is revalidated. With `precompress`,
 * brotli and gzip copies of the compressible files sit beside them (writePrecompressedFiles),
 * which the server sends without compressing anything.
 *
 * The output is replaced as a whole: built in a fresh directory beside `out`, then
 * renamed over it, so a server serving `out` meanwhile never sends half a build (a
 * request in the instant between the two finds no page and is answered 404). A build
 * that fails (APP_LOAD_FAILED with file:line:column) leaves `out` as it was.
 */
export async function buildWebApp(web: string, out: string, options: WebBuildOptions): Promise<WebBuild> {
  const webDirectory = resolve(web);
  const page = join(webDirectory, "index.html");
  if (!existsSync(page)) throw new CairnError("INVALID_ARGUMENT", `${webDirectory} has no index.html: a page's directory holds index.html and the scripts it loads`);
  const html = readFileSync(page, "utf8");
  const entries = new Map<string, string>();
  for (const [, src] of html.matchAll(MODULE_SCRIPT)) {
    if (/^[a-z]+:|^\/\//i.test(src!) || !SOURCE_ENTRY.test(src!)) continue;
    const file = join(webDirectory, src!.startsWith("/") ? src!.slice(1) : src!);
    if (!existsSync(file)) throw new CairnError("INVALID_ARGUMENT", `${page} loads ${src}, which is not a file of ${webDirectory}`);
    entries.set(src!, file);
  }
  const finalDirectory = resolve(out);
  const staging = `${finalDirectory}.building`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    let metafile: Metafile;
    try {
      const result = await build({
        entryPoints: [...new Set(entries.values())],
        outdir: staging,
        entryNames: "assets/[name]-[hash]",
        assetNames: "assets/[name]-[hash]",
        bundle: true,
        format: "esm",
        platform: "browser",
        target: "es2022",
        jsx: "automatic",
        loader: FILE_LOADERS,
        minify: options.minify,
        sourcemap: options.minify ? false : "linked",
        metafile: true,
        logLevel: "silent",
        plugins: [appImports("browser")],
      });
      metafile = result.metafile;
    } catch (error) {
      throw bundleFailed(`the page in ${webDirectory} failed to build`, error);
    }
    const built = outputsByEntry(metafile, staging);
    const rewritten = html.replace(MODULE_SCRIPT, (tag, src: string) => {
      const file = entries.get(src);
      const output = file === undefined ? undefined : built.get(file);
      if (output === undefined) return tag;
      const styles = output.css === null ? "" : `<link rel="stylesheet" href="/${output.css}">`;
      return `${styles}${tag.replace(src, `/${output.js}`)}`;
    });
    writeFileSync(join(staging, "index.html"), rewritten);
    const publicDirectory = join(webDirectory, "public");
    if (existsSync(publicDirectory)) cpSync(publicDirectory, staging, { recursive: true });
    const precompressed = options.precompress === true ? await writePrecompressedFiles(staging) : [];
    rmSync(finalDirectory, { recursive: true, force: true });
    mkdirSync(dirname(finalDirectory), { recursive: true });
    renameSync(staging, finalDirectory);
    return {
      assets: Object.keys(metafile.outputs).map((output) => relative(staging, resolve(output))).filter((name) => !name.endsWith(".map")),
      inputs: Object.keys(metafile.inputs).map((input) => resolve(input)),
      precompressed,
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Each entry's script and style sheet, relative to the output directory. */
function outputsByEntry(metafile: Metafile, outDirectory: string): Map<string, { js: string; css: string | null }> {
  const built = new Map<string, { js: string; css: string | null }>();
  for (const [output, info] of Object.entries(metafile.outputs)) {
    if (info.entryPoint === undefined) continue;
    built.set(resolve(info.entryPoint), {
      js: relative(outDirectory, resolve(output)),
      css: info.cssBundle === undefined ? null : relative(outDirectory, resolve(info.cssBundle)),
    });
  }
  return built;
}
