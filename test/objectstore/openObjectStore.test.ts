/**
 * Scenario: a user names a store with a URL (`--store <url>`). Accepted forms parse into
 * a location (directory, memory, S3 bucket + prefix + parameters); directories are
 * created on open; everything else — unknown schemes, malformed URLs, unknown or
 * repeated parameters, bad bucket names — is refused with STORE_URL_INVALID whose
 * message lists the accepted forms, and nothing is created.
 */
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { openObjectStore } from "../../src/objectstore/openObjectStore.js";
import { parseStoreUrl } from "../../src/objectstore/parseStoreUrl.js";
import { bytes, expectBody } from "./conformance.js";

const directories: string[] = [];
afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

describe("parseStoreUrl", () => {
  it("reads directories from file URLs and plain paths", () => {
    expect(parseStoreUrl("file:///var/lib/cairn")).toEqual({ kind: "fs", directory: "/var/lib/cairn" });
    expect(parseStoreUrl("file:///with%20space")).toEqual({ kind: "fs", directory: "/with space" });
    expect(parseStoreUrl("/abs/data", "/elsewhere")).toEqual({ kind: "fs", directory: "/abs/data" });
    expect(parseStoreUrl("./data", "/work")).toEqual({ kind: "fs", directory: "/work/data" });
    expect(parseStoreUrl(".cairn/data", "/work")).toEqual({ kind: "fs", directory: "/work/.cairn/data" });
  });

  it("reads memory stores", () => {
    expect(parseStoreUrl("mem://tests")).toEqual({ kind: "memory", name: "tests" });
    expect(parseStoreUrl("mem://")).toEqual({ kind: "memory", name: undefined });
  });

  it("reads S3 buckets, prefixes and parameters", () => {
    expect(parseStoreUrl("s3://cairn")).toEqual({
      kind: "s3",
      bucket: "cairn",
      prefix: "",
      endpoint: undefined,
      region: undefined,
      forcePathStyle: undefined,
      checksums: undefined,
    });
    expect(parseStoreUrl("s3://cairn/")).toMatchObject({ prefix: "" });
    expect(parseStoreUrl("s3://cairn/prod/eu")).toMatchObject({ prefix: "prod/eu/" });
    expect(parseStoreUrl("s3://cairn/prod/")).toMatchObject({ prefix: "prod/" });
    expect(parseStoreUrl("s3://cairn/a%20b/%C3%BC")).toMatchObject({ prefix: "a b/ü/" });
    expect(
      parseStoreUrl(
        "s3://my.bucket-1/p?endpoint=http://127.0.0.1:9000&region=us-east-1&forcePathStyle=false&checksums=WHEN_REQUIRED",
      ),
    ).toEqual({
      kind: "s3",
      bucket: "my.bucket-1",
      prefix: "p/",
      endpoint: "http://127.0.0.1:9000",
      region: "us-east-1",
      forcePathStyle: false,
      checksums: "when_required",
    });
    expect(parseStoreUrl("s3://cairn?endpoint=https://acct.r2.cloudflarestorage.com&region=auto")).toMatchObject({
      endpoint: "https://acct.r2.cloudflarestorage.com",
      region: "auto",
    });
  });

  it.each([
    ["", "empty"],
    ["   ", "empty"],
    ["ftp://host/x", 'unknown scheme "ftp:"'],
    ["http://example.com/bucket", 'unknown scheme "http:"'],
    ["s3://", "bucket name is empty"],
    ["s3:///prefix", "bucket name is empty"],
    ["s3://Bad_Bucket", "not a valid bucket name"],
    ["s3://ab", "not a valid bucket name"],
    ["s3://bucket:9000", "endpoint="],
    ["s3://user:secret@bucket", "endpoint="],
    ["s3://bucket?region=eu-west-1&region=us-east-1", "given twice"],
    ["s3://bucket?prefix=x", 'unknown parameter "prefix"'],
    ["s3://bucket?endpoint=ftp://host", "not an http:// or https:// URL"],
    ["s3://bucket?endpoint=not a url", "not an http:// or https:// URL"],
    ["s3://bucket?forcePathStyle=yes", "true or false"],
    ["s3://bucket?checksums=always", "when_supported or when_required"],
    ["s3://bucket?region=EU WEST", "not a region name"],
    ["s3://bucket/%E0%A4%A", "malformed %-escape"],
    ["s3://bucket#fragment", "no fragment"],
    ["file://remote-host/x", "not a local file URL"],
    ["file:///x?y=1", "no query"],
    ["mem://name/path", "mem://name"],
  ])("refuses %j (%s) with STORE_URL_INVALID listing the accepted forms", (url, reason) => {
    let thrown: unknown;
    try {
      parseStoreUrl(url);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: "STORE_URL_INVALID" });
    const message = (thrown as Error).message;
    expect(message).toContain(reason);
    expect(message).toContain("file:///absolute/path");
    expect(message).toContain("mem://name");
    expect(message).toContain("s3://bucket[/prefix]");
  });
});

describe("openObjectStore", () => {
  it("creates a directory store, from a relative path or a file URL", async () => {
    const base = await mkdtemp(join(tmpdir(), "cairn-open-"));
    directories.push(base);
    const relativeStore = await openObjectStore("nested/data", { workingDirectory: base });
    expect(relativeStore).toBeInstanceOf(FsObjectStore);
    await relativeStore.create("k", bytes("v"));
    expect((await stat(join(base, "nested", "data"))).isDirectory()).toBe(true);
    const viaUrl = await openObjectStore(pathToFileURL(join(base, "nested", "data")).href);
    expect(expectBody(await viaUrl.get("k")).body).toEqual(bytes("v"));
  });

  it("refuses a path that is a file, creating nothing", async () => {
    const base = await mkdtemp(join(tmpdir(), "cairn-open-"));
    directories.push(base);
    await writeFile(join(base, "file"), "not a directory");
    await expect(openObjectStore(join(base, "file"))).rejects.toMatchObject({ code: "STORE_URL_INVALID" });
    await expect(openObjectStore(join(base, "file", "below"))).rejects.toMatchObject({ code: "STORE_URL_INVALID" });
    expect(await readdir(base)).toEqual(["file"]);
  });

  it("opens shared named memory stores", async () => {
    const name = `open-${process.pid}`;
    const first = await openObjectStore(`mem://${name}`);
    expect(first).toBeInstanceOf(MemoryObjectStore);
    await first.create("k", bytes("v"));
    expect(expectBody(await (await openObjectStore(`mem://${name}`)).get("k")).body).toEqual(bytes("v"));
    await first.delete("k");
  });

  it("refuses unknown schemes before touching anything", async () => {
    await expect(openObjectStore("gs://bucket/prefix")).rejects.toMatchObject({ code: "STORE_URL_INVALID" });
    await expect(openObjectStore("s3://bucket?endpont=http://x")).rejects.toMatchObject({ code: "STORE_URL_INVALID" });
  });
});
