/**
 * Scenario: a bucket of 2,500 keys (25 groups of 100) listed through the SDK: default
 * pages of 1000, prefixes, delimiters rolled up into CommonPrefixes across page breaks,
 * start-after, a full last page that is not truncated, UTF-8 byte order, url encoding and
 * token errors. Then DeleteObjects in normal and Quiet mode, and the request shapes S3
 * refuses (no integrity header, over 1000 keys, malformed XML).
 */
import {
  DeleteObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type ListObjectsV2CommandInput,
  type ListObjectsV2CommandOutput,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3ClientConfigFor, sendRawS3Request, startS3Endpoint, type S3Endpoint } from "./index.js";

let endpoint: S3Endpoint;
let client: S3Client;
let bulkClient: S3Client;

const GROUPS = 25;
const KEYS_PER_GROUP = 100;
const groupName = (group: number) => `g${String(group).padStart(2, "0")}`;
const dataKey = (group: number, index: number) => `data/${groupName(group)}/${String(index).padStart(4, "0")}`;

/** Fills the bucket; WHEN_REQUIRED skips the client-side CRC32, which dominates the setup time. */
async function putAll(keys: readonly string[]): Promise<void> {
  const concurrency = 64;
  for (let start = 0; start < keys.length; start += concurrency) {
    await Promise.all(
      keys
        .slice(start, start + concurrency)
        .map((key) => bulkClient.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: key, Body: key }))),
    );
  }
}

/** Every page of a listing, following continuation tokens. */
async function allPages(input: Omit<ListObjectsV2CommandInput, "Bucket">): Promise<ListObjectsV2CommandOutput[]> {
  const pages: ListObjectsV2CommandOutput[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket, ...input, ContinuationToken: token }));
    pages.push(page);
    token = page.NextContinuationToken;
    expect(token !== undefined).toBe(page.IsTruncated);
  } while (token !== undefined && pages.length < 100);
  return pages;
}

const keysOf = (pages: readonly ListObjectsV2CommandOutput[]) => pages.flatMap((page) => page.Contents?.map((entry) => entry.Key) ?? []);
const prefixesOf = (pages: readonly ListObjectsV2CommandOutput[]) =>
  pages.flatMap((page) => page.CommonPrefixes?.map((entry) => entry.Prefix) ?? []);
const errorCode = (body: Buffer) => /<Code>([^<]*)<\/Code>/.exec(body.toString())?.[1];

beforeAll(async () => {
  endpoint = await startS3Endpoint();
  client = new S3Client(s3ClientConfigFor(endpoint));
  bulkClient = new S3Client({ ...s3ClientConfigFor(endpoint), requestChecksumCalculation: "WHEN_REQUIRED" });
  const keys: string[] = [];
  for (let group = 0; group < GROUPS; group++) {
    for (let index = 0; index < KEYS_PER_GROUP; index++) keys.push(dataKey(group, index));
  }
  await putAll(keys);
  await putAll(["mix/a", "mix/b/1", "mix/b/2", "mix/c", "mix/d/1", "order/z", "order/\uE000", "order/\uFFFD", "order/\u{1F600}", "enc/a b&c"]);
});

afterAll(async () => {
  client.destroy();
  bulkClient.destroy();
  await endpoint.close();
});

describe("ListObjectsV2", () => {
  it("pages 2,500 keys as 1000 + 1000 + 500 in UTF-8 order", async () => {
    const pages = await allPages({ Prefix: "data/" });
    expect(pages.map((page) => [page.KeyCount, page.IsTruncated])).toEqual([
      [1000, true],
      [1000, true],
      [500, false],
    ]);
    const keys = keysOf(pages);
    expect(keys).toHaveLength(GROUPS * KEYS_PER_GROUP);
    const sorted = [...keys].sort((left, right) => Buffer.compare(Buffer.from(left!), Buffer.from(right!)));
    expect(keys).toEqual(sorted);
    expect(pages[1]?.ContinuationToken).toBe(pages[0]?.NextContinuationToken);
    expect(pages[0]?.Contents?.[0]).toMatchObject({ Key: dataKey(0, 0), ETag: `"${createHash("md5").update(dataKey(0, 0)).digest("hex")}"`, Size: 13, StorageClass: "STANDARD" });
  });

  it("answers a full last page with IsTruncated=false", async () => {
    const pages = await allPages({ Prefix: "data/g0" });
    expect(pages.map((page) => [page.KeyCount, page.IsTruncated, page.NextContinuationToken])).toEqual([[1000, false, undefined]]);
  });

  it("rolls keys up into CommonPrefixes and pages over them without repeats", async () => {
    const pages = await allPages({ Prefix: "data/", Delimiter: "/", MaxKeys: 10 });
    expect(pages.map((page) => page.KeyCount)).toEqual([10, 10, 5]);
    expect(keysOf(pages)).toEqual([]);
    expect(prefixesOf(pages)).toEqual(Array.from({ length: GROUPS }, (_, group) => `data/${groupName(group)}/`));
    expect(pages[0]?.Delimiter).toBe("/");
  });

  it("interleaves keys and prefixes one per page", async () => {
    const pages = await allPages({ Prefix: "mix/", Delimiter: "/", MaxKeys: 1 });
    expect(pages.map((page) => [page.Contents?.[0]?.Key, page.CommonPrefixes?.[0]?.Prefix])).toEqual([
      ["mix/a", undefined],
      [undefined, "mix/b/"],
      ["mix/c", undefined],
      [undefined, "mix/d/"],
    ]);
  });

  it("starts after start-after, and ignores it once a continuation token is given", async () => {
    const first = await client.send(
      new ListObjectsV2Command({ Bucket: endpoint.bucket, Prefix: "data/", StartAfter: dataKey(5, 99), MaxKeys: 2 }),
    );
    expect(first.Contents?.map((entry) => entry.Key)).toEqual([dataKey(6, 0), dataKey(6, 1)]);
    expect(first.StartAfter).toBe(dataKey(5, 99));
    const second = await client.send(
      new ListObjectsV2Command({
        Bucket: endpoint.bucket,
        Prefix: "data/",
        StartAfter: dataKey(20, 0),
        ContinuationToken: first.NextContinuationToken,
        MaxKeys: 1,
      }),
    );
    expect(second.Contents?.map((entry) => entry.Key)).toEqual([dataKey(6, 2)]);
  });

  it("orders by UTF-8 bytes: U+E000 < U+FFFD < U+1F600", async () => {
    const pages = await allPages({ Prefix: "order/" });
    expect(keysOf(pages)).toEqual(["order/z", "order/\uE000", "order/\uFFFD", "order/\u{1F600}"]);
  });

  it("url-encodes keys when asked", async () => {
    const page = await client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket, Prefix: "enc/", EncodingType: "url" }));
    expect(page.Contents?.map((entry) => entry.Key)).toEqual(["enc/a%20b%26c"]);
    expect(page.EncodingType).toBe("url");
  });

  it("answers the S3 XML shape, caps max-keys at 1000 and refuses empty or foreign tokens", async () => {
    const list = (query: string) => sendRawS3Request(endpoint, { method: "GET", path: `/${endpoint.bucket}?list-type=2&${query}` });
    const capped = await list("prefix=mix%2F&max-keys=5000");
    expect(capped.status).toBe(200);
    const head =
      '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      "<Name>cairn-test</Name><Prefix>mix/</Prefix><MaxKeys>1000</MaxKeys><KeyCount>5</KeyCount><IsTruncated>false</IsTruncated>";
    const xml = capped.body.toString();
    expect(xml.startsWith(head)).toBe(true);
    expect(xml.slice(head.length)).toMatch(
      new RegExp(
        "^<Contents><Key>mix/a</Key><LastModified>\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z</LastModified>" +
          "<ETag>&quot;[0-9a-f]{32}&quot;</ETag><Size>5</Size><StorageClass>STANDARD</StorageClass></Contents>",
      ),
    );
    const empty = await list("continuation-token=");
    expect([empty.status, errorCode(empty.body)]).toEqual([400, "InvalidArgument"]);
    const foreign = await list("continuation-token=bm90LWEtdG9rZW4");
    expect([foreign.status, errorCode(foreign.body)]).toEqual([400, "InvalidArgument"]);
    const badMax = await list("max-keys=-1");
    expect([badMax.status, errorCode(badMax.body)]).toEqual([400, "InvalidArgument"]);
  });
});

describe("DeleteObjects", () => {
  it("deletes keys and reports missing ones as Deleted", async () => {
    await putAll(["del/a", "del/b"]);
    const result = await client.send(
      new DeleteObjectsCommand({ Bucket: endpoint.bucket, Delete: { Objects: [{ Key: "del/a" }, { Key: "del/b" }, { Key: "del/missing" }] } }),
    );
    expect(result.Deleted?.map((entry) => entry.Key)).toEqual(["del/a", "del/b", "del/missing"]);
    expect(result.Errors).toBeUndefined();
    expect(endpoint.peek(endpoint.bucket, "del/a")).toBeUndefined();
  });

  it("lists nothing in Quiet mode, with checksums only when required, and keeps special characters in keys", async () => {
    const keys = ["quiet/1", "quiet/&<>\"'\r\n"];
    await putAll(keys);
    const unsigned = new S3Client({ ...s3ClientConfigFor(endpoint), requestChecksumCalculation: "WHEN_REQUIRED" });
    const result = await unsigned.send(
      new DeleteObjectsCommand({ Bucket: endpoint.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
    );
    unsigned.destroy();
    expect(result.Deleted ?? []).toEqual([]);
    expect(result.Errors).toBeUndefined();
    for (const key of keys) expect(endpoint.peek(endpoint.bucket, key)).toBeUndefined();
  });

  it("reports a version other than null as an error entry", async () => {
    const result = await client.send(
      new DeleteObjectsCommand({ Bucket: endpoint.bucket, Delete: { Objects: [{ Key: "v", VersionId: "3" }], Quiet: true } }),
    );
    expect(result.Errors).toEqual([expect.objectContaining({ Key: "v", VersionId: "3", Code: "NoSuchVersion" })]);
  });

  describe("raw requests", () => {
    const deleteXml = (count: number) =>
      `<Delete>${Array.from({ length: count }, (_, index) => `<Object><Key>raw/${index}</Key></Object>`).join("")}</Delete>`;
    const post = (body: string, headers: Record<string, string>) =>
      sendRawS3Request(endpoint, { method: "POST", path: `/${endpoint.bucket}?delete=`, body, headers });
    const md5 = (body: string) => createHash("md5").update(body).digest("base64");

    it("needs Content-MD5 or an x-amz-checksum-* header", async () => {
      const missing = await post(deleteXml(1), {});
      expect([missing.status, errorCode(missing.body)]).toEqual([400, "InvalidRequest"]);
      const withMd5 = await post(deleteXml(1), { "content-md5": md5(deleteXml(1)) });
      expect(withMd5.status).toBe(200);
      expect(withMd5.body.toString()).toContain("<Deleted><Key>raw/0</Key></Deleted>");
    });

    it("refuses more than 1000 keys and malformed XML with MalformedXML", async () => {
      const tooMany = await post(deleteXml(1001), { "content-md5": md5(deleteXml(1001)) });
      expect([tooMany.status, errorCode(tooMany.body)]).toEqual([400, "MalformedXML"]);
      const broken = "<Delete><Object><Key>x</Key></Objec></Delete>";
      const malformed = await post(broken, { "content-md5": md5(broken) });
      expect([malformed.status, errorCode(malformed.body)]).toEqual([400, "MalformedXML"]);
      const exactly = await post(deleteXml(1000), { "content-md5": md5(deleteXml(1000)) });
      expect(exactly.status).toBe(200);
    });
  });
});
