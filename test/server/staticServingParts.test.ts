/**
 * Scenarios: the pure parts behind static serving, fed plain values. Which names count as
 * fingerprinted (cached for a year: a wrong yes serves stale files after a deploy), which
 * encoding an Accept-Encoding gets, and the compressed-variant cache staying within its
 * byte bound however many files are asked for, sharing one compression between
 * concurrent requests and forgetting a failed one.
 */
import { describe, expect, it } from "vitest";
import { CompressedVariants } from "../../src/server/CompressedVariants.js";
import { preferredEncoding } from "../../src/server/contentEncoding.js";
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
