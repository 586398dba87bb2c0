import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { STATIC_COMPRESS_BYTES_MIN } from "../base/index.js";
import { packageEntryFile } from "../functions/index.js";
import { browserBundle } from "./browserBundle.js";
import { compressAll, CONTENT_ENCODINGS, preferredEncoding, type ContentEncoding } from "./contentEncoding.js";
import { isCompressible } from "./contentTypes.js";
import { dashboardFiles } from "./DashboardAssets.js";
import { appendVary, CACHE_REVALIDATE, notModified } from "./httpCaching.js";

/** A browser app the server serves at `/`: its HTML page and the script it loads as /app.js. */
export interface WebApp {
  readonly htmlPath: string;
  /** The page's module script (TypeScript), bundled with the client library by esbuild. */
  readonly entryPath: string;
}

export interface WebAsset {
  readonly contentType: string;
  readonly body: Buffer;
  /** A strong ETag: the body's hash. */
  readonly etag: string;
  /** The body in each encoding, for a compressible body of at least STATIC_COMPRESS_BYTES_MIN (empty otherwise). */
  readonly compressed: ReadonlyMap<ContentEncoding, Buffer>;
}

/** The client library's public entry (`cairn/client`): the sources in a checkout, the compiled files in the package. */
const CLIENT_ENTRY = packageEntryFile("cairn/client")!;
const HTML = "text/html; charset=utf-8";
const SCRIPT = "text/javascript; charset=utf-8";
const STYLESHEET = "text/css; charset=utf-8";

/**
 * The server's built-in files, built in memory at startup: `/cairn-client.js` (the
 * client library as one ES module, for any page) and, when a web app is given, `/` and
 * `/app.js`; without one, `/` is `statusPage` if given (none when a static directory
 * serves `/`). Bundled for the browser platform, so a Node-only import in the client fails
 * the build (and the server's startup) instead of a page at runtime. Each is compressed
 * once here, in every encoding. The dashboard's files are not among them: see
 * `dashboardAsset`.
 */
export async function buildWebAssets(webApp: WebApp | null, statusPage: string | null): Promise<Map<string, WebAsset>> {
  const assets = new Map<string, WebAsset>();
  assets.set("/cairn-client.js", await bundle(CLIENT_ENTRY));
  if (webApp === null) {
    if (statusPage !== null) assets.set("/", await webAsset(HTML, Buffer.from(statusPage)));
    return assets;
  }
  assets.set("/", await webAsset(HTML, readFileSync(webApp.htmlPath)));
  assets.set("/app.js", await bundle(webApp.entryPath));
  return assets;
}

/**
 * The dashboard's file at `path` (`/_dashboard`, `/_dashboard/`, `/_dashboard/app.js`,
 * `/_dashboard/app.css`), or undefined for any other path: files without any deployment
 * data, whose page asks the admin API for everything with the admin key. Built (and
 * compressed) on the first request for one, once per process, not at every node's start:
 * most nodes (and every test process) never serve it.
 */
export async function dashboardAsset(path: string): Promise<WebAsset | undefined> {
  if (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return undefined;
  return (await dashboardAssets()).get(path);
}

const DASHBOARD_PATH = "/_dashboard";
let dashboard: Promise<ReadonlyMap<string, WebAsset>> | null = null;

function dashboardAssets(): Promise<ReadonlyMap<string, WebAsset>> {
  if (dashboard === null) {
    dashboard = (async () => {
      const files = await dashboardFiles();
      const page = await webAsset(HTML, files.html);
      return new Map([
        ["/_dashboard", page],
        ["/_dashboard/", page],
        ["/_dashboard/app.js", await webAsset(SCRIPT, files.script)],
        ["/_dashboard/app.css", await webAsset(STYLESHEET, files.stylesheet)],
      ]);
    })();
    dashboard.catch(() => (dashboard = null));
  }
  return dashboard;
}

async function webAsset(contentType: string, body: Buffer): Promise<WebAsset> {
  const compressed = new Map<ContentEncoding, Buffer>();
  if (isCompressible(contentType) && body.byteLength >= STATIC_COMPRESS_BYTES_MIN) {
    for (const encoding of CONTENT_ENCODINGS) compressed.set(encoding, await compressAll(body, encoding, body.byteLength));
  }
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { contentType, body, etag, compressed };
}

/**
 * Answers a GET or HEAD for a built-in file (405 otherwise): revalidated on every use
 * (the names carry no hash), 304 when the ETag matches, compressed when accepted.
 */
export function sendWebAsset(request: IncomingMessage, response: ServerResponse, asset: WebAsset): void {
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
    response.end("use GET or HEAD\n");
    return;
  }
  response.setHeader("content-type", asset.contentType);
  response.setHeader("etag", asset.etag);
  response.setHeader("cache-control", CACHE_REVALIDATE);
  if (asset.compressed.size > 0) appendVary(response, "Accept-Encoding");
  if (notModified(request, asset.etag)) {
    response.writeHead(304);
    response.end();
    return;
  }
  const encoding = asset.compressed.size > 0 ? preferredEncoding(request.headers["accept-encoding"]) : null;
  const body = encoding === null ? asset.body : asset.compressed.get(encoding)!;
  if (encoding !== null) response.setHeader("content-encoding", encoding);
  response.writeHead(200, { "content-length": body.byteLength });
  response.end(request.method === "HEAD" ? undefined : body);
}

/** Bundles built (and compressed) in this process, by entry: the sources do not change while it runs. */
const bundles = new Map<string, Promise<WebAsset>>();

function bundle(entry: string): Promise<WebAsset> {
  let built = bundles.get(entry);
  if (built === undefined) {
    built = browserBundle(entry, "a page's script").then((body) => webAsset(SCRIPT, body));
    bundles.set(entry, built);
    built.catch(() => bundles.delete(entry));
  }
  return built;
}

