/**
 * Scenarios: a static directory holding compressed copies beside its files (`x.js.br`,
 * `x.js.gz`, as `cairn build` writes them), served by a node over real sockets. A client
 * accepting an encoding gets the copy's exact bytes (not a compression made here), with
 * Vary and an ETag of its own per encoding that 304s only for that encoding; HEAD gives
 * the copy's length. A copy older than its file (the file rewritten after the build), a
 * copy that is a directory or a symlink out of the directory is never sent: the file is
 * compressed here instead. A range is of the file as it is. A copy asked for by its own
 * name is plain bytes (application/octet-stream, no Content-Encoding), never taken for
 * the script it compresses.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decoded, rawRequest } from "./rawHttp.js";
import { startTestNode } from "./serverHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-static-precompressed-"));
const site = join(root, "site");
const assets = join(site, "assets");
const SCRIPT = Array.from({ length: 500 }, (_, i) => `export const value${i} = "${"v".repeat(i % 17)}";\n`).join("");
const STYLE = Array.from({ length: 200 }, (_, i) => `.row-${i} { margin: ${i}px; }\n`).join("");
/** Compressed at the fastest levels: bytes the server's own compression (brotli 9, gzip 9) would not produce. */
const SCRIPT_BR = brotliCompressSync(SCRIPT, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } });
const SCRIPT_GZ = gzipSync(SCRIPT, { level: 1 });
const STYLE_GZ = gzipSync(STYLE, { level: 1 });
const OUTSIDE = "compressed bytes from outside the static directory";

beforeAll(() => {
  mkdirSync(assets, { recursive: true });
  mkdirSync(join(root, "outside"), { recursive: true });
  writeFileSync(join(site, "index.html"), "<!doctype html><p>app</p>");
  writeFileSync(join(assets, "main-3f2a9c1b.js"), SCRIPT);
  writeFileSync(join(assets, "main-3f2a9c1b.js.br"), SCRIPT_BR);
  writeFileSync(join(assets, "main-3f2a9c1b.js.gz"), SCRIPT_GZ);
  // Only a gzip copy: a client accepting both gets it rather than a brotli compression made here.
  writeFileSync(join(assets, "style-3f2a9c1b.css"), STYLE);
  writeFileSync(join(assets, "style-3f2a9c1b.css.gz"), STYLE_GZ);
  // Copies that must not be sent: a directory, a symlink out of the directory.
  writeFileSync(join(assets, "odd.js"), SCRIPT);
  mkdirSync(join(assets, "odd.js.br"));
  writeFileSync(join(root, "outside", "leak.js.br"), OUTSIDE);
  writeFileSync(join(assets, "leak.js"), SCRIPT);
  symlinkSync(join(root, "outside", "leak.js.br"), join(assets, "leak.js.br"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function siteUrl(): Promise<string> {
  const started = await startTestNode({ staticDir: site });
  cleanups.push(() => started.close());
  return started.node.url;
}

const SCRIPT_PATH = "/assets/main-3f2a9c1b.js";

describe("precompressed copies beside static files", () => {
  it("sends the copy of the encoding the client prefers, byte for byte, with Vary and the copy's length", async () => {
    const url = await siteUrl();
    for (const [acceptEncoding, encoding, copy] of [
      ["gzip, deflate, br", "br", SCRIPT_BR],
      ["br", "br", SCRIPT_BR],
      ["gzip", "gzip", SCRIPT_GZ],
      ["br;q=0, gzip", "gzip", SCRIPT_GZ],
    ] as const) {
      const answer = await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": acceptEncoding } });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-encoding"], acceptEncoding).toBe(encoding);
      expect(answer.body.equals(copy), acceptEncoding).toBe(true);
      expect(answer.headers["content-length"]).toBe(String(copy.byteLength));
      expect(answer.headers["content-type"]).toBe("text/javascript; charset=utf-8");
      expect(answer.headers["vary"]).toBe("Accept-Encoding");
      expect(answer.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(answer.headers["accept-ranges"]).toBeUndefined();
      const head = await rawRequest(url, SCRIPT_PATH, { method: "HEAD", headers: { "accept-encoding": acceptEncoding } });
      expect(head.headers["content-length"]).toBe(String(copy.byteLength));
      expect(head.headers["etag"]).toBe(answer.headers["etag"]);
      expect(head.body.byteLength).toBe(0);
    }
    const plain = await rawRequest(url, SCRIPT_PATH);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.toString()).toBe(SCRIPT);
    expect(plain.headers["vary"]).toBe("Accept-Encoding");
    // Only a gzip copy: sent to a client that accepts brotli too; a brotli-only client gets one made here.
    const style = await rawRequest(url, "/assets/style-3f2a9c1b.css", { headers: { "accept-encoding": "br, gzip" } });
    expect(style.headers["content-encoding"]).toBe("gzip");
    expect(style.body.equals(STYLE_GZ)).toBe(true);
    const styleBr = await rawRequest(url, "/assets/style-3f2a9c1b.css", { headers: { "accept-encoding": "br" } });
    expect(styleBr.headers["content-encoding"]).toBe("br");
    expect(decoded(styleBr).toString()).toBe(STYLE);
  });

  it("gives each encoding its own ETag, and a 304 only for the encoding it names", async () => {
    const url = await siteUrl();
    const tags = new Map<string, string>();
    for (const acceptEncoding of ["br", "gzip", "identity"]) {
      tags.set(acceptEncoding, (await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": acceptEncoding } })).headers["etag"]!);
    }
    expect(new Set(tags.values()).size).toBe(3);
    expect(tags.get("identity")).toMatch(/^"/);
    expect(tags.get("br")).toMatch(/^W\/".*br"$/);
    for (const [acceptEncoding, etag] of tags) {
      const again = await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": acceptEncoding, "if-none-match": etag } });
      expect(again.status, acceptEncoding).toBe(304);
      expect(again.headers["etag"]).toBe(etag);
    }
    // The brotli copy's ETag from a client now accepting only gzip: the gzip copy, whole.
    const switched = await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": "gzip", "if-none-match": tags.get("br")! } });
    expect(switched.status).toBe(200);
    expect(switched.body.equals(SCRIPT_GZ)).toBe(true);
  });

  it("never sends a copy older than its file, one that is a directory, or one that leads out of the directory", async () => {
    const url = await siteUrl();
    for (const target of ["/assets/odd.js", "/assets/leak.js"]) {
      const answer = await rawRequest(url, target, { headers: { "accept-encoding": "br" } });
      expect(answer.status, target).toBe(200);
      expect(answer.headers["content-encoding"]).toBe("br");
      expect(answer.body.toString()).not.toContain(OUTSIDE);
      expect(decoded(answer).toString(), target).toBe(SCRIPT);
    }
    // The script rewritten after the build: its copies hold the old content and are passed over.
    const rewritten = SCRIPT.replace("value0", "renamed0");
    writeFileSync(join(assets, "main-3f2a9c1b.js"), rewritten);
    const past = new Date(Date.UTC(2020, 0, 1));
    for (const copy of ["main-3f2a9c1b.js.br", "main-3f2a9c1b.js.gz"]) utimesSync(join(assets, copy), past, past);
    try {
      for (const encoding of ["br", "gzip"]) {
        const answer = await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": encoding } });
        expect(answer.headers["content-encoding"]).toBe(encoding);
        expect(decoded(answer).toString()).toBe(rewritten);
      }
    } finally {
      writeFileSync(join(assets, "main-3f2a9c1b.js"), SCRIPT);
      writeFileSync(join(assets, "main-3f2a9c1b.js.br"), SCRIPT_BR);
      writeFileSync(join(assets, "main-3f2a9c1b.js.gz"), SCRIPT_GZ);
    }
  });

  it("answers a range with the file as it is, whatever copies there are", async () => {
    const url = await siteUrl();
    const answer = await rawRequest(url, SCRIPT_PATH, { headers: { "accept-encoding": "br, gzip", range: "bytes=0-99" } });
    expect(answer.status).toBe(206);
    expect(answer.headers["content-encoding"]).toBeUndefined();
    expect(answer.headers["content-range"]).toBe(`bytes 0-99/${Buffer.byteLength(SCRIPT)}`);
    expect(answer.body.toString()).toBe(SCRIPT.slice(0, 100));
  });

  it("serves a copy asked for by its own name as plain bytes, never as the script it compresses", async () => {
    const url = await siteUrl();
    for (const [name, bytes] of [
      ["main-3f2a9c1b.js.br", SCRIPT_BR],
      ["main-3f2a9c1b.js.gz", SCRIPT_GZ],
    ] as const) {
      const requests: Record<string, string>[] = [{}, { "accept-encoding": "br, gzip" }, { accept: "text/html", "accept-encoding": "gzip" }];
      for (const headers of requests) {
        const answer = await rawRequest(url, `/assets/${name}`, { headers });
        expect(answer.status, name).toBe(200);
        expect(answer.headers["content-type"]).toBe("application/octet-stream");
        expect(answer.headers["content-encoding"]).toBeUndefined();
        expect(answer.headers["vary"]).toBeUndefined();
        expect(answer.body.equals(bytes)).toBe(true);
      }
    }
    // Not a copy of a copy: `x.js.br.br` is not looked for, and is a plain 404.
    expect((await rawRequest(url, "/assets/main-3f2a9c1b.js.br.br")).status).toBe(404);
    expect(readFileSync(join(assets, "main-3f2a9c1b.js.br")).equals(SCRIPT_BR)).toBe(true);
  });
});
