/**
 * Scenarios: a node serving a static directory answers Range requests over real sockets,
 * with crafted requests and exact headers. One byte range gets a 206 of that slice of the
 * file as it is — never compressed, even for a client that accepts brotli — with
 * Content-Range, Content-Length and the strong ETag; a range past the end a 416 whose
 * Content-Range is `bytes *` and the size; malformed, invalid, hostile (huge, negative, overlapping,
 * a thousand ranges) and multiple ranges the full 200, the file sent once. If-Range with
 * the current ETag lets the range apply, any other (weak, stale, a date) gets the full file.
 * Full answers of the bytes as they are say `Accept-Ranges: bytes`, compressed ones do not;
 * HEAD answers GET's headers and ignores Range.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decoded, rawRequest, type RawAnswer } from "./rawHttp.js";
import { startTestNode } from "./serverHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-static-ranges-"));
const site = join(root, "site");
/** Not compressible (video): ranges as a media player asks for them. */
const CLIP = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 7) % 256));
/** Compressible: a client accepting brotli still gets the slice as it is. */
const SCRIPT = Array.from({ length: 400 }, (_, i) => `export const line${i} = ${i};\n`).join("");
const SCRIPT_BYTES = Buffer.from(SCRIPT);

beforeAll(() => {
  mkdirSync(join(site, "assets"), { recursive: true });
  writeFileSync(join(site, "index.html"), "<!doctype html><p>app</p>");
  writeFileSync(join(site, "assets", "clip.mp4"), CLIP);
  writeFileSync(join(site, "assets", "main-3f2a9c1b.js"), SCRIPT);
  writeFileSync(join(site, "assets", "empty.mp4"), "");
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

function expectSlice(answer: RawAnswer, whole: Buffer, start: number, end: number): void {
  expect(answer.status).toBe(206);
  expect(answer.headers["content-range"]).toBe(`bytes ${start}-${end}/${whole.byteLength}`);
  expect(answer.headers["content-length"]).toBe(String(end - start + 1));
  expect(answer.headers["accept-ranges"]).toBe("bytes");
  expect(answer.headers["content-encoding"]).toBeUndefined();
  expect(answer.body.equals(whole.subarray(start, end + 1))).toBe(true);
}

function expectWhole(answer: RawAnswer, whole: Buffer): void {
  expect(answer.status).toBe(200);
  expect(answer.headers["content-range"]).toBeUndefined();
  expect(decoded(answer).equals(whole)).toBe(true);
}

describe("range requests for static files", () => {
  it("answers one byte range with a 206 of that slice, its end clamped to the file's", async () => {
    const url = await siteUrl();
    const size = CLIP.byteLength;
    const cases: [string, number, number][] = [
      ["bytes=0-99", 0, 99],
      ["bytes=0-0", 0, 0],
      ["bytes=9000-", 9000, size - 1],
      ["bytes=-1", size - 1, size - 1],
      ["bytes=-250", size - 250, size - 1],
      ["bytes=-99999999999999999999999999", 0, size - 1],
      ["bytes=5000-99999999999999999999999999", 5000, size - 1],
      ["bytes=9999-9999", 9999, 9999],
      ["Bytes=10-19,", 10, 19],
    ];
    for (const [range, start, end] of cases) {
      const answer = await rawRequest(url, "/assets/clip.mp4", { headers: { range } });
      expectSlice(answer, CLIP, start, end);
      expect(answer.headers["content-type"]).toBe("video/mp4");
      expect(answer.headers["etag"]).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
      expect(answer.headers["cache-control"]).toBe("no-cache");
    }
    // A compressible file: the range is of the bytes as they are, whatever the client accepts.
    const script = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { range: "bytes=100-199", "accept-encoding": "br, gzip" } });
    expectSlice(script, SCRIPT_BYTES, 100, 199);
    expect(script.headers["etag"]).toBe((await rawRequest(url, "/assets/main-3f2a9c1b.js")).headers["etag"]);
    expect(script.headers["etag"]).toMatch(/^"/);
    expect(script.headers["vary"]).toMatch(/Accept-Encoding/);
    expect(script.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    // The SPA's fallback page is a file like any other.
    const page = await rawRequest(url, "/rooms/42", { headers: { accept: "text/html", range: "bytes=0-8" } });
    expect(page.status).toBe(206);
    expect(page.body.toString()).toBe("<!doctype");
  });

  it("answers a range past the end with 416 and `Content-Range: bytes */size`, sending none of the file", async () => {
    const url = await siteUrl();
    for (const range of ["bytes=10000-", "bytes=10000-20000", "bytes=-0", `bytes=${"9".repeat(1000)}-`, `bytes=${"9".repeat(100)}-${"9".repeat(101)}`]) {
      const answer = await rawRequest(url, "/assets/clip.mp4", { headers: { range } });
      expect(answer.status, range).toBe(416);
      expect(answer.headers["content-range"]).toBe(`bytes */${CLIP.byteLength}`);
      expect(answer.headers["content-type"]).toBe("text/plain; charset=utf-8");
      expect(answer.headers["cache-control"]).toBe("no-cache");
      expect(answer.headers["etag"]).toBeUndefined();
      expect(answer.body.toString()).toBe("range not satisfiable\n");
    }
    const script = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { range: `bytes=${SCRIPT_BYTES.byteLength}-`, "accept-encoding": "br" } });
    expect(script.status).toBe(416);
    expect(script.headers["content-encoding"]).toBeUndefined();
    expect(script.headers["content-range"]).toBe(`bytes */${SCRIPT_BYTES.byteLength}`);
  });

  it("ignores malformed, invalid, hostile and multiple ranges: the full 200, the file sent once", async () => {
    const url = await siteUrl();
    const ranges = [
      "bytes=5-3",
      "bytes=-",
      "bytes=",
      "bytes",
      "garbage",
      "bytes=a-b",
      "bytes=--5",
      "bytes=-5--1",
      "bytes=+5-10",
      "bytes=0x10-20",
      "bytes=1e3-",
      "bytes=1.5-3",
      "items=0-5",
      "bytes=0-5;bytes=6-7",
      "bytes=9007199254740993-9007199254740992",
      "bytes=0-5,10-15",
      "bytes=0-9999,0-9999,0-9999",
      "bytes=0-100,50-150",
      "bytes=20000-,30000-",
      `bytes=${Array.from({ length: 1000 }, (_, i) => `${i}-${i + 5000}`).join(",")}`,
      `bytes=${Array.from({ length: 1000 }, () => "-9999").join(",")}`,
    ];
    for (const range of ranges) {
      const answer = await rawRequest(url, "/assets/clip.mp4", { headers: { range } });
      expectWhole(answer, CLIP);
      expect(answer.headers["content-length"], range).toBe(String(CLIP.byteLength));
      expect(answer.headers["accept-ranges"]).toBe("bytes");
    }
    // Ignored, the Range leaves compression as usual.
    const script = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { range: "bytes=0-1,5-6", "accept-encoding": "gzip" } });
    expectWhole(script, SCRIPT_BYTES);
    expect(script.headers["content-encoding"]).toBe("gzip");
    // An empty file has no byte to send: its range is ignored.
    const empty = await rawRequest(url, "/assets/empty.mp4", { headers: { range: "bytes=0-0" } });
    expect(empty.status).toBe(200);
    expect(empty.headers["content-length"]).toBe("0");
  });

  it("lets If-Range with the current ETag apply the range; a weak, stale or other tag or a date gets the full file", async () => {
    const url = await siteUrl();
    const etag = (await rawRequest(url, "/assets/clip.mp4")).headers["etag"]!;
    expectSlice(await rawRequest(url, "/assets/clip.mp4", { headers: { range: "bytes=0-9", "if-range": etag } }), CLIP, 0, 9);
    for (const ifRange of [`W/${etag}`, `"0-0"`, `${etag}, "other"`, "Sun, 06 Dec 2026 07:44:29 GMT", "*"]) {
      expectWhole(await rawRequest(url, "/assets/clip.mp4", { headers: { range: "bytes=0-9", "if-range": ifRange } }), CLIP);
    }
    // A compressed answer's (weak) ETag never lets a range apply: the bytes it named were another encoding's.
    const compressed = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { "accept-encoding": "br" } });
    expect(compressed.headers["etag"]).toMatch(/^W\//);
    const resumed = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { range: "bytes=100-", "if-range": compressed.headers["etag"]!, "accept-encoding": "br" } });
    expectWhole(resumed, SCRIPT_BYTES);
    expect(resumed.headers["content-encoding"]).toBe("br");
    // A redeploy changes the file: the old ETag gets the new file whole, not a slice spliced onto the old one.
    const changed = Buffer.concat([CLIP, Buffer.from("v2")]);
    writeFileSync(join(site, "assets", "clip.mp4"), changed);
    try {
      expectWhole(await rawRequest(url, "/assets/clip.mp4", { headers: { range: "bytes=9000-", "if-range": etag } }), changed);
    } finally {
      writeFileSync(join(site, "assets", "clip.mp4"), CLIP);
    }
    // If-None-Match is answered first: a current copy gets its 304 whatever the range.
    const current = (await rawRequest(url, "/assets/clip.mp4")).headers["etag"]!;
    const notModified = await rawRequest(url, "/assets/clip.mp4", { headers: { range: "bytes=0-9", "if-none-match": current } });
    expect(notModified.status).toBe(304);
    expect(notModified.body.byteLength).toBe(0);
  });

  it("offers ranges on full answers of the bytes as they are, not on compressed ones; HEAD answers GET's headers and ignores Range", async () => {
    const url = await siteUrl();
    const full = await rawRequest(url, "/assets/clip.mp4");
    expect(full.headers["accept-ranges"]).toBe("bytes");
    const plainScript = await rawRequest(url, "/assets/main-3f2a9c1b.js");
    expect(plainScript.headers["accept-ranges"]).toBe("bytes");
    expect(plainScript.headers["etag"]).toMatch(/^"/);
    const compressed = await rawRequest(url, "/assets/main-3f2a9c1b.js", { headers: { "accept-encoding": "gzip" } });
    expect(compressed.headers["accept-ranges"]).toBeUndefined();
    expect(compressed.headers["etag"]).not.toBe(plainScript.headers["etag"]);

    for (const [target, headers] of [
      ["/assets/clip.mp4", {}],
      ["/assets/main-3f2a9c1b.js", {}],
      ["/assets/main-3f2a9c1b.js", { "accept-encoding": "br" }],
    ] as const) {
      const get = await rawRequest(url, target, { headers });
      const head = await rawRequest(url, target, { method: "HEAD", headers });
      const ranged = await rawRequest(url, target, { method: "HEAD", headers: { ...headers, range: "bytes=0-9" } });
      for (const answer of [head, ranged]) {
        expect(answer.status).toBe(200);
        expect(answer.body.byteLength).toBe(0);
        for (const name of ["content-type", "content-length", "content-encoding", "accept-ranges", "etag", "cache-control", "vary", "content-range"]) {
          expect(answer.headers[name], `${target} ${name}`).toBe(get.headers[name]);
        }
      }
    }
  });

  it("sends a slice from the end of a file of several megabytes", async () => {
    const big = Buffer.alloc(6 * 1024 * 1024, "cairn ");
    big.write("the end", big.byteLength - 7);
    writeFileSync(join(site, "assets", "big.mp4"), big);
    try {
      const url = await siteUrl();
      const answer = await rawRequest(url, "/assets/big.mp4", { headers: { range: "bytes=-7" } });
      expectSlice(answer, readFileSync(join(site, "assets", "big.mp4")), big.byteLength - 7, big.byteLength - 1);
      expect(answer.body.toString()).toBe("the end");
    } finally {
      rmSync(join(site, "assets", "big.mp4"));
    }
  });
});
