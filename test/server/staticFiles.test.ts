/**
 * Scenarios: a node in this process serving a built single-page app from a directory
 * (`staticDir`, `cairn serve --static`), reached over real sockets with crafted requests.
 * `/` and the app's routes get index.html (the SPA fallback), a missing asset a 404;
 * traversal attempts — raw, percent-encoded, with encoded separators and backslashes,
 * NUL, hidden files, and symlinks pointing out of the directory — never reach a file
 * outside it; Cairn's own routes are not shadowed by files of the same name. Compressible
 * files go out as brotli or gzip (decoding to the file, a big one compressed while it is
 * sent), with Vary; ETags (one per encoding) give 304s and change when a file does; hashed assets are
 * cached as immutable, index.html revalidated. Without a static directory, `/` is a
 * status page that names no file path and no function. A directory that does not exist
 * or has no index.html stops the start with INVALID_ARGUMENT, in the node and in the CLI;
 * `cairn serve --static --cors-origin` serves the app and the origins given.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningNode } from "../../src/server/index.js";
import { runCairn } from "../support/runCairn.js";
import { decoded, rawRequest } from "./rawHttp.js";
import { ServeProcess } from "./serveProcess.js";
import { startTestNode } from "./serverHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-static-"));
const site = join(root, "site");
const SECRET = "the secret outside the static directory";
const INDEX = `<!doctype html><html><body><div id="app">the single-page app</div>${"<!-- padding -->".repeat(100)}</body></html>`;
const SCRIPT = `export const rows = [${Array.from({ length: 2_000 }, (_, i) => `{ id: ${i}, label: "row ${i}" }`).join(", ")}];\n`;
const HASHED = "assets/index-3f2a9c1b.js";
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array.from({ length: 3_000 }, (_, i) => i % 251)]);

beforeAll(() => {
  mkdirSync(join(site, "assets"), { recursive: true });
  mkdirSync(join(site, "docs"), { recursive: true });
  mkdirSync(join(site, "api"), { recursive: true });
  mkdirSync(join(root, "outside"), { recursive: true });
  writeFileSync(join(root, "outside", "secret.txt"), SECRET);
  writeFileSync(join(root, "outside", "secret"), SECRET);
  writeFileSync(join(site, "index.html"), INDEX);
  writeFileSync(join(site, HASHED), SCRIPT);
  writeFileSync(join(site, "assets", "logo.png"), PNG);
  writeFileSync(join(site, "docs", "index.html"), "<p>the docs</p>");
  writeFileSync(join(site, "robots.txt"), "User-agent: *\n");
  writeFileSync(join(site, ".env"), SECRET);
  // Files named like Cairn's own routes: they must never be what those routes answer.
  writeFileSync(join(site, "api", "health"), SECRET);
  writeFileSync(join(site, "cairn-client.js"), SECRET);
  writeFileSync(join(site, "metrics"), SECRET);
  symlinkSync(join(root, "outside", "secret.txt"), join(site, "leak.txt"));
  symlinkSync(join(root, "outside"), join(site, "linked"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node(overrides: Parameters<typeof startTestNode>[0] = { staticDir: site }): Promise<RunningNode> {
  const started = await startTestNode(overrides);
  cleanups.push(() => started.close());
  return started.node;
}

const page = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };

describe("a node serving a static directory", () => {
  it("answers `/`, the app's routes and a directory with an index.html; a missing asset or a non-page request with 404", async () => {
    const { url } = await node();
    for (const target of ["/", "/index.html", "/rooms/42", "/rooms/42/", "/settings"]) {
      const answer = await rawRequest(url, target, { headers: page });
      expect(answer.status, target).toBe(200);
      expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(answer.headers["cache-control"]).toBe("no-cache");
      expect(answer.body.toString()).toBe(INDEX);
    }
    const docs = await rawRequest(url, "/docs/", { headers: page });
    expect(docs.body.toString()).toBe("<p>the docs</p>");
    expect((await rawRequest(url, "/robots.txt")).body.toString()).toBe("User-agent: *\n");
    // A missing file with an extension is a 404 even for a page request; without HTML accepted, so is a route.
    expect((await rawRequest(url, "/assets/index-00000000a.js", { headers: page })).status).toBe(404);
    expect((await rawRequest(url, "/favicon.ico", { headers: page })).status).toBe(404);
    expect((await rawRequest(url, "/rooms/42", { headers: { accept: "application/json" } })).status).toBe(404);
    expect((await rawRequest(url, "/rooms/42")).status).toBe(404);
    // GET and HEAD only.
    const posted = await rawRequest(url, "/rooms/42", { method: "POST", headers: page, body: "x" });
    expect(posted.status).toBe(405);
    expect(posted.headers["allow"]).toBe("GET, HEAD");
    const head = await rawRequest(url, "/", { method: "HEAD", headers: page });
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(Buffer.byteLength(INDEX)));
    expect(head.body.byteLength).toBe(0);
  });

  it("never serves a file outside the directory, a hidden file or a symlink out of it, however the path is spelled", async () => {
    const { url } = await node();
    const attempts = [
      "/../outside/secret.txt",
      "/../../../../../../etc/passwd",
      "/%2e%2e/outside/secret.txt",
      "/%2E%2E/%2e%2e/outside/secret",
      "/assets/%2e%2e/%2e%2e/outside/secret.txt",
      "/..%2foutside%2fsecret.txt",
      "/..%2Foutside%2Fsecret",
      "/..%5coutside%5csecret.txt",
      "/..\\outside\\secret.txt",
      "/assets\\..\\..\\outside\\secret",
      "/%5c..%5c..%5coutside%5csecret",
      "/leak.txt",
      "/linked/secret.txt",
      "/linked/secret",
      "/.env",
      "/%2eenv",
      "/index.html%00.png",
      "/index.html%00",
      "/%ff%fe",
      "/%",
    ];
    for (const target of attempts) {
      for (const headers of [{}, page]) {
        const answer = await rawRequest(url, target, { headers });
        expect(answer.body.toString(), target).not.toContain(SECRET);
        expect(answer.body.toString(), target).not.toMatch(/root:/);
        // Either refused, or — for a path the URL parser resolved to a page route — the app's index.html.
        if (answer.status === 200) expect(answer.body.toString(), target).toBe(INDEX);
        else expect([400, 404], target).toContain(answer.status);
      }
    }
    // Refused outright, not taken for a route: a hidden file, an encoded separator, NUL, a symlink out.
    for (const target of ["/.env", "/..%2foutside%2fsecret", "/index.html%00", "/linked/secret.txt", "/leak.txt"]) {
      expect((await rawRequest(url, target, { headers: page })).status, target).toBe(404);
    }
  });

  it("never lets a file shadow Cairn's own routes", async () => {
    const { url } = await node();
    const health = await rawRequest(url, "/api/health", { headers: page });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body.toString())).toMatchObject({ status: expect.any(String) });
    const client = decoded(await rawRequest(url, "/cairn-client.js", { headers: { "accept-encoding": "gzip" } }));
    expect(client.toString()).not.toContain(SECRET);
    expect(client.byteLength).toBeGreaterThan(1_000);
    expect((await rawRequest(url, "/metrics")).body.toString()).not.toContain(SECRET);
    // An unknown API path is the API's 404, not the SPA's page.
    const unknown = await rawRequest(url, "/api/nothing-here", { headers: page });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body.toString())).toMatchObject({ error: { code: "FUNCTION_NOT_FOUND" } });
  });

  it("compresses compressible files the client accepts, decoding to the file, with Vary; not images nor tiny files", async () => {
    const { url } = await node();
    for (const [acceptEncoding, expected] of [
      ["gzip, deflate, br", "br"],
      ["gzip", "gzip"],
      ["br;q=0, gzip;q=0.5", "gzip"],
      ["*", "br"],
      ["identity", undefined],
      ["", undefined],
    ] as const) {
      for (let round = 0; round < 2; round++) {
        const answer = await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": acceptEncoding } });
        expect(answer.status).toBe(200);
        expect(answer.headers["content-encoding"], acceptEncoding).toBe(expected);
        expect(answer.headers["vary"]).toMatch(/Accept-Encoding/);
        expect(answer.headers["content-type"]).toBe("text/javascript; charset=utf-8");
        expect(decoded(answer).toString()).toBe(SCRIPT);
        if (expected !== undefined) expect(answer.body.byteLength).toBeLessThan(Buffer.byteLength(SCRIPT) / 3);
        expect(Number(answer.headers["content-length"])).toBe(answer.body.byteLength);
      }
    }
    const png = await rawRequest(url, "/assets/logo.png", { headers: { "accept-encoding": "gzip, br" } });
    expect(png.headers["content-encoding"]).toBeUndefined();
    expect(png.headers["content-type"]).toBe("image/png");
    expect(png.body.equals(PNG)).toBe(true);
    const tiny = await rawRequest(url, "/robots.txt", { headers: { "accept-encoding": "gzip, br" } });
    expect(tiny.headers["content-encoding"]).toBeUndefined();
    const index = await rawRequest(url, "/", { headers: { ...page, "accept-encoding": "gzip" } });
    expect(index.headers["content-encoding"]).toBe("gzip");
    expect(decoded(index).toString()).toBe(INDEX);
  });

  it("compresses a file too big to keep while sending it, and sends it whole uncompressed", async () => {
    const big = Array.from({ length: 180_000 }, (_, i) => `line ${i} of a big bundle\n`).join("");
    expect(Buffer.byteLength(big)).toBeGreaterThan(4 * 1024 * 1024);
    writeFileSync(join(site, "assets", "big.js"), big);
    const { url } = await node();
    for (const encoding of ["gzip", "br"]) {
      const answer = await rawRequest(url, "/assets/big.js", { headers: { "accept-encoding": encoding } });
      expect(answer.headers["content-encoding"]).toBe(encoding);
      expect(answer.headers["content-length"]).toBeUndefined();
      expect(decoded(answer).toString() === big).toBe(true);
    }
    const plain = await rawRequest(url, "/assets/big.js");
    expect(plain.headers["content-length"]).toBe(String(Buffer.byteLength(big)));
    expect(plain.body.toString() === big).toBe(true);
    rmSync(join(site, "assets", "big.js"));
  });

  it("answers a matching If-None-Match with 304, caches hashed assets as immutable, and changes the ETag with the file", async () => {
    const { url } = await node();
    const hashed = await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": "br" } });
    expect(hashed.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    const etag = hashed.headers["etag"]!;
    expect(etag).toMatch(/^W\/".+"$/);
    const again = await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": "br", "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.body.byteLength).toBe(0);
    expect(again.headers["etag"]).toBe(etag);
    expect(again.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect((await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": "br", "if-none-match": `"other", ${etag}` } })).status).toBe(304);
    expect((await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": "br", "if-none-match": `W/"other"` } })).status).toBe(200);
    // Each encoding has its own ETag: the brotli body's does not confirm the gzip or the uncompressed one.
    expect((await rawRequest(url, `/${HASHED}`, { headers: { "accept-encoding": "gzip", "if-none-match": etag } })).status).toBe(200);
    expect((await rawRequest(url, `/${HASHED}`, { headers: { "if-none-match": etag } })).status).toBe(200);
    // Names without a content hash are revalidated every time.
    for (const target of ["/", "/assets/logo.png", "/robots.txt"]) {
      expect((await rawRequest(url, target, { headers: page })).headers["cache-control"], target).toBe("no-cache");
    }

    // A redeploy rewrites index.html: the old ETag no longer matches, and the compressed variant is the new content's.
    const index = await rawRequest(url, "/", { headers: { ...page, "accept-encoding": "gzip" } });
    expect((await rawRequest(url, "/", { headers: { ...page, "accept-encoding": "gzip", "if-none-match": index.headers["etag"]! } })).status).toBe(304);
    const redeployed = INDEX.replace("the single-page app", "the single-page app, version two");
    writeFileSync(join(site, "index.html"), redeployed);
    try {
      const fresh = await rawRequest(url, "/rooms/1", { headers: { ...page, "accept-encoding": "gzip", "if-none-match": index.headers["etag"]! } });
      expect(fresh.status).toBe(200);
      expect(fresh.headers["etag"]).not.toBe(index.headers["etag"]);
      expect(decoded(fresh).toString()).toBe(redeployed);
    } finally {
      writeFileSync(join(site, "index.html"), INDEX);
    }
  });
});

describe("a node without a static directory", () => {
  it("shows a status page at `/` that names no file path and no function", async () => {
    const { url } = await node({});
    const status = await rawRequest(url, "/", { headers: page });
    expect(status.status).toBe(200);
    const text = status.body.toString();
    expect(text).toContain("Cairn is running");
    expect(text).toContain("/api/sync");
    expect(text).not.toMatch(/notes:|sync test app|\/tmp\/|cairn-server-/);
    expect((await rawRequest(url, "/rooms/42", { headers: page })).status).toBe(404);
  });
});

describe("cairn serve --static --cors-origin", () => {
  it("serves the app's index.html at `/` and its routes, and the given origins' pages", async () => {
    const server = await ServeProcess.start(["--port", "0", "--store", join(root, "serve-bucket"), "--local", join(root, "serve-local"), "--static", site, "--cors-origin", "https://a.example", "--cors-origin", "https://b.example,http://localhost:5173"]);
    try {
      expect(server.output).toMatch(/pages of other origins allowed: https:\/\/a\.example, https:\/\/b\.example, http:\/\/localhost:5173/);
      for (const target of ["/", "/rooms/42"]) expect((await rawRequest(server.url, target, { headers: page })).body.toString()).toBe(INDEX);
      for (const origin of ["https://a.example", "https://b.example", "http://localhost:5173"]) {
        expect((await rawRequest(server.url, "/api/health", { headers: { origin } })).headers["access-control-allow-origin"]).toBe(origin);
      }
      expect((await rawRequest(server.url, "/api/health", { headers: { origin: "http://localhost:5174" } })).status).toBe(403);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe("a static directory that cannot serve", () => {
  it("stops the node's start with INVALID_ARGUMENT when missing, not a directory, without index.html, or beside a web app", async () => {
    const empty = join(root, "empty");
    mkdirSync(empty, { recursive: true });
    const cases: [Parameters<typeof startTestNode>[0], RegExp][] = [
      [{ staticDir: join(root, "no-such-dir") }, /does not exist/],
      [{ staticDir: join(site, "robots.txt") }, /is not a directory/],
      [{ staticDir: empty }, /has no index\.html/],
      [{ staticDir: site, webApp: { htmlPath: join(site, "index.html"), entryPath: join(site, HASHED) } }, /not both/],
    ];
    for (const [overrides, message] of cases) {
      await expect(startTestNode(overrides)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(message) });
    }
  });

  it("makes `cairn serve --static` exit 1 with the reason before the bucket is touched", async () => {
    const bucket = join(root, "cli-bucket");
    const run = await runCairn(["serve", "--port", "0", "--store", bucket, "--local", join(root, "cli-local"), "--static", join(root, "no-such-build")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/INVALID_ARGUMENT.*no-such-build does not exist/);
    expect(existsSync(bucket) ? readdirSync(bucket) : []).toEqual([]);
  });
});
