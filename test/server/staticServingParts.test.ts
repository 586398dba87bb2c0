/**
 * Scenarios: the pure parts behind static serving, fed plain values. Which names count as
 * fingerprinted (cached for a year: a wrong yes serves stale files after a deploy), which
 * encoding an Accept-Encoding gets, and the compressed-variant cache staying within its
 * byte bound however many files are asked for, sharing one compression between
 * concurrent requests and forgetting a failed one; what a Range header asks of a file of
 * a given size, hostile ones included, and when If-Range lets it apply.
 */
import { describe, expect, it } from "vitest";
import { CompressedVariants } from "../../src/server/CompressedVariants.js";
import { byteRangeOf, ifRangeHolds } from "../../src/server/byteRange.js";
import { acceptedEncodings, preferredEncoding } from "../../src/server/contentEncoding.js";
import { isFingerprinted } from "../../src/server/httpCaching.js";
import { staticSegments } from "../../src/server/staticSegments.js";

describe("static serving's parts", () => {
  it("takes bundler names with a content hash for fingerprinted, and nothing that only looks long", () => {
    for (const name of ["assets/index-3f2a9c1b.js", "assets/index-BxYz12a9.css", "main.3f2a9c1b.js", "chunk-a1b2c3d4e5f6.mjs", "logo-9f8e7d6c.svg"]) {
      expect(isFingerprinted(name), name).toBe(true);
    }
    for (const name of ["index.html", "app.js", "my-component-file.js", "index-fallback.js", "bundle-20240101.js", "jquery-3.7.1.min.js", "a-b1c2.js", "assets/index-Bx-Yz12a.js"]) {
      expect(isFingerprinted(name), name).toBe(false);
    }
  });

  it("picks brotli, then gzip, as the client accepts them", () => {
    expect(preferredEncoding(undefined)).toBe(null);
    expect(preferredEncoding("gzip, deflate, br, zstd")).toBe("br");
    expect(preferredEncoding("gzip")).toBe("gzip");
    expect(preferredEncoding("br;q=0, gzip;q=0.1")).toBe("gzip");
    expect(preferredEncoding("*;q=0, identity")).toBe(null);
    expect(preferredEncoding("*")).toBe("br");
    expect(preferredEncoding("GZIP; Q=1")).toBe("gzip");
    expect(acceptedEncodings("gzip, br")).toEqual(["br", "gzip"]);
    expect(acceptedEncodings("br;q=0, *")).toEqual(["gzip"]);
    expect(acceptedEncodings("identity")).toEqual([]);
  });

  it("reads one byte range of a file, clamps its end, refuses one past the end, and ignores anything else", () => {
    const size = 1000;
    const slice = (start: number, end: number) => ({ kind: "slice", start, end });
    const cases: [string | undefined, object][] = [
      [undefined, { kind: "whole" }],
      ["bytes=0-99", slice(0, 99)],
      ["BYTES=0-0", slice(0, 0)],
      ["bytes=999-", slice(999, 999)],
      ["bytes=500-", slice(500, 999)],
      ["bytes=-1", slice(999, 999)],
      ["bytes=-1000", slice(0, 999)],
      ["bytes=-5000", slice(0, 999)],
      ["bytes=10-5000", slice(10, 999)],
      ["bytes=0-5,", slice(0, 5)],
      ["bytes= 3-4 ", slice(3, 4)],
      ["bytes=00000000000000000000000000010-00000000000000000000000000019", slice(10, 19)],
      [`bytes=0-${"9".repeat(1000)}`, slice(0, 999)],
      [`bytes=-${"9".repeat(1000)}`, slice(0, 999)],
      // Well-formed, but starting at or past the end, or empty: a 416.
      ["bytes=1000-", { kind: "unsatisfiable" }],
      ["bytes=1000-2000", { kind: "unsatisfiable" }],
      ["bytes=-0", { kind: "unsatisfiable" }],
      [`bytes=${"9".repeat(1000)}-`, { kind: "unsatisfiable" }],
      [`bytes=${"9".repeat(1000)}-${"9".repeat(1001)}`, { kind: "unsatisfiable" }],
      ["bytes=9007199254740992-9007199254740993", { kind: "unsatisfiable" }],
    ];
    // Malformed, invalid, another unit or several ranges: ignored, the whole file.
    const ignored = [
      "", "bytes", "bytes=", "bytes=-", "bytes=,", "bytes=5-3", "bytes=9007199254740993-9007199254740992",
      "bytes=a-b", "bytes=--5", "bytes=-5-", "bytes=+5-10", "bytes=0x10-20", "bytes=1e3-", "bytes=1.5-3", "bytes=-5--1",
      "bytes=٠-٥", "bytes=0-5 garbage", "bytes 0-5", "bytes:0-5", "items=0-5", "=0-5", "bytes=0-5;q=1",
      "bytes=0-5,10-15", "bytes=0-100,50-150", "bytes=-1,-1", "bytes=0-5,garbage", "bytes=0-5, bytes=6-7",
      `bytes=${Array.from({ length: 1000 }, (_, i) => `${i}-${i}`).join(",")}`,
    ];
    for (const [range, expected] of cases) expect(byteRangeOf(range, size), range).toEqual(expected);
    for (const range of ignored) expect(byteRangeOf(range, size), range).toEqual({ kind: "whole" });
    // An empty file has no byte to send: any range is ignored.
    expect(byteRangeOf("bytes=0-0", 0)).toEqual({ kind: "whole" });
    expect(byteRangeOf("bytes=-5", 0)).toEqual({ kind: "whole" });
  });

  it("lets a range apply only under no If-Range or one naming the current strong ETag", () => {
    expect(ifRangeHolds(undefined, `"3e8-1a"`)).toBe(true);
    expect(ifRangeHolds(`"3e8-1a"`, `"3e8-1a"`)).toBe(true);
    expect(ifRangeHolds(` "3e8-1a" `, `"3e8-1a"`)).toBe(true);
    for (const ifRange of [`W/"3e8-1a"`, `"3e8-1b"`, `"3e8-1a", "other"`, "Sun, 06 Dec 2026 07:44:29 GMT", "", "*"]) {
      expect(ifRangeHolds(ifRange, `"3e8-1a"`), ifRange).toBe(false);
    }
    expect(ifRangeHolds([`"3e8-1a"`, `"3e8-1a"`], `"3e8-1a"`)).toBe(false);
  });

  it("refuses path segments that would name another path than they show", () => {
    expect(staticSegments("/assets/index-1.js")).toEqual(["assets", "index-1.js"]);
    expect(staticSegments("/a//b/")).toEqual(["a", "b"]);
    expect(staticSegments("/caf%C3%A9.txt")).toEqual(["café.txt"]);
    expect(staticSegments("/.well-known/security.txt")).toEqual([".well-known", "security.txt"]);
    for (const path of ["/..", "/a/../b", "/%2e%2e/x", "/..%2fx", "/a%2Fb", "/a%5cb", "/a\\b", "/a%00b", "/%0a", "/.env", "/.git/config", "/%", "/%e0%a4%a"]) {
      expect(staticSegments(path), path).toBe(null);
    }
  });

  it("keeps the compressed variants within their byte bound, shares a compression, and forgets a failed one", async () => {
    const variants = new CompressedVariants(10_000);
    for (let file = 0; file < 100; file++) {
      await variants.get(`file-${file}`, async () => Buffer.alloc(1_500));
      expect(variants.bytes).toBeLessThanOrEqual(10_000);
    }
    expect(variants.bytes).toBe(6 * 1_500);
    // Larger than the bound alone: returned, never kept.
    expect((await variants.get("huge", async () => Buffer.alloc(20_000))).byteLength).toBe(20_000);
    expect(variants.bytes).toBeLessThanOrEqual(10_000);

    let compressions = 0;
    const compress = async () => {
      compressions++;
      return Buffer.from("shared");
    };
    const [first, second] = await Promise.all([variants.get("shared", compress), variants.get("shared", compress)]);
    expect(first).toBe(second);
    expect(compressions).toBe(1);

    await expect(variants.get("flaky", async () => Promise.reject(new Error("read failed")))).rejects.toThrow("read failed");
    expect(await variants.get("flaky", async () => Buffer.from("second try"))).toEqual(Buffer.from("second try"));
  });
});
