/**
 * Scenario: single-object traffic as the SDK and hand-built requests send it. Bodies go
 * up plain, as an aws-chunked stream with a CRC32 trailer, unsigned (WHEN_REQUIRED) and
 * as a 5 MB buffer behind `Expect: 100-continue`; every integrity claim that is wrong
 * (trailer, checksum header, payload hash, Content-MD5, framing, length) is refused and
 * stores nothing. Reads cover ranges, 304/412 conditions, HEAD, missing keys and the
 * response headers S3 always sends.
 */
import {
  ChecksumAlgorithm,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checksumBase64 } from "./checksums.js";
import {
  encodeAwsChunked,
  objectPath,
  s3ClientConfigFor,
  sendRawS3Request,
  startS3Endpoint,
  type RawS3Request,
  type S3Endpoint,
} from "./index.js";
import { s3FailureOf } from "../errorCode.js";

let endpoint: S3Endpoint;
let client: S3Client;
let unsignedClient: S3Client;

beforeAll(async () => {
  endpoint = await startS3Endpoint();
  client = new S3Client(s3ClientConfigFor(endpoint));
  unsignedClient = new S3Client({ ...s3ClientConfigFor(endpoint), requestChecksumCalculation: "WHEN_REQUIRED" });
});

afterAll(async () => {
  client.destroy();
  unsignedClient.destroy();
  await endpoint.close();
});

const md5Hex = (bytes: Uint8Array) => createHash("md5").update(bytes).digest("hex");
const stored = (key: string) => {
  const body = endpoint.peek(endpoint.bucket, key);
  return body === undefined ? undefined : Buffer.from(body);
};
const raw = (request: RawS3Request) => sendRawS3Request(endpoint, request);
const errorCode = (body: Buffer) => /<Code>([^<]*)<\/Code>/.exec(body.toString())?.[1];

describe("uploads through the SDK", () => {
  it.each([
    ["default checksums", () => client],
    ["WHEN_REQUIRED", () => unsignedClient],
  ])("stores a buffer body and returns its MD5 etag (%s)", async (_label, clientOf) => {
    const body = Buffer.from(`plain body via ${_label}`);
    const put = await clientOf().send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: `plain-${_label}`, Body: body }));
    expect(put.ETag).toBe(`"${md5Hex(body)}"`);
    expect(stored(`plain-${_label}`)).toEqual(body);
  });

  it.each([
    ["aws-chunked with a CRC32 trailer (default)", () => client],
    ["UNSIGNED-PAYLOAD (WHEN_REQUIRED)", () => unsignedClient],
  ])("stores a streamed body with ContentLength: %s", async (label, clientOf) => {
    const parts = [Buffer.alloc(70_000, 1), Buffer.from("middle"), Buffer.alloc(10_000, 2)];
    const expected = Buffer.concat(parts);
    const key = `stream-${label}`;
    const put = await clientOf().send(
      new PutObjectCommand({ Bucket: endpoint.bucket, Key: key, Body: Readable.from(parts), ContentLength: expected.length }),
    );
    expect(put.ETag).toBe(`"${md5Hex(expected)}"`);
    expect(stored(key)).toEqual(expected);
  });

  it("accepts a 5 MB body (sent with Expect: 100-continue) and reads it back intact", async () => {
    const body = Buffer.alloc(5 * 1024 * 1024);
    for (let index = 0; index < body.length; index += 4096) body[index] = index % 251;
    const put = await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "big/5mb", Body: body }));
    expect(put.ETag).toBe(`"${md5Hex(body)}"`);
    const got = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "big/5mb" }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
  });

  it.each([ChecksumAlgorithm.CRC32C, ChecksumAlgorithm.SHA1, ChecksumAlgorithm.SHA256])(
    "verifies and returns a %s checksum chosen by the caller",
    async (algorithm) => {
      const key = `checksum-${algorithm}`;
      await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: key, Body: "sum me", ChecksumAlgorithm: algorithm }));
      const got = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: key, ChecksumMode: "ENABLED" }));
      expect(await got.Body!.transformToString()).toBe("sum me");
      const returned = { CRC32C: got.ChecksumCRC32C, SHA1: got.ChecksumSHA1, SHA256: got.ChecksumSHA256 }[algorithm as "CRC32C"];
      expect(returned).toBe(checksumBase64(algorithm.toLowerCase() as "crc32c", Buffer.from("sum me")));
    },
  );

  it("keeps keys literal: dots, double slashes, spaces, unicode, + % ~ and control characters", async () => {
    const keys = ["a/./b", "a/../b", "a//b", "/leading", "sp ace+plus%percent~tilde", "ünï/€/😀", "tab\tcr\rlf\n", "..", "."];
    for (const [index, key] of keys.entries()) {
      await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: key, Body: `k${index}` }));
    }
    for (const [index, key] of keys.entries()) {
      expect(stored(key)?.toString()).toBe(`k${index}`);
      const got = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: key }));
      expect(await got.Body!.transformToString()).toBe(`k${index}`);
    }
    const listed = await client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket }));
    const listedKeys = new Set(listed.Contents?.map((entry) => entry.Key));
    for (const key of keys) expect(listedKeys.has(key)).toBe(true);
  });
});

describe("integrity checks on raw requests", () => {
  const path = (key: string) => `${objectPath(endpoint.bucket, key)}?x-id=PutObject`;
  const hello = Buffer.from("hello world");
  const streamed = (trailerValue: string, decodedLength = hello.length, chunks = [hello.subarray(0, 6), hello.subarray(6)]) =>
    ({
      method: "PUT",
      chunked: true,
      payloadHash: "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
      headers: {
        "content-encoding": "aws-chunked",
        "x-amz-decoded-content-length": String(decodedLength),
        "x-amz-trailer": "x-amz-checksum-crc32",
        "x-amz-sdk-checksum-algorithm": "CRC32",
      },
      body: encodeAwsChunked(chunks, { "x-amz-checksum-crc32": trailerValue }),
    }) as const;

  it("accepts a hand-built aws-chunked body with the right trailer", async () => {
    const response = await raw({ ...streamed("DUoRhQ=="), path: path("raw-chunked") });
    expect(response.status).toBe(200);
    expect(stored("raw-chunked")).toEqual(hello);
  });

  it.each([
    ["a wrong trailer CRC", streamed(checksumBase64("crc32", Buffer.from("other"))), 400, "BadDigest"],
    ["a malformed trailer value", streamed("not base64!"), 400, "InvalidRequest"],
    ["a decoded length that disagrees", streamed("DUoRhQ==", 12), 400, "IncompleteBody"],
  ] as const)("refuses %s and stores nothing", async (label, request, status, code) => {
    const key = `refused-${label}`;
    const response = await raw({ ...request, path: path(key) });
    expect([response.status, errorCode(response.body)]).toEqual([status, code]);
    expect(stored(key)).toBeUndefined();
  });

  it("refuses broken aws-chunked framing with InvalidRequest", async () => {
    const response = await raw({
      ...streamed("DUoRhQ=="),
      body: Buffer.from("6\r\nhello world\r\n0\r\n\r\n"),
      path: path("bad-framing"),
    });
    expect([response.status, errorCode(response.body)]).toEqual([400, "InvalidRequest"]);
  });

  it.each([
    ["a wrong x-amz-checksum-crc32", { "x-amz-checksum-crc32": checksumBase64("crc32", Buffer.from("x")) }, "BadDigest"],
    ["a malformed x-amz-checksum-crc32", { "x-amz-checksum-crc32": "AAAA" }, "InvalidRequest"],
    ["two checksum headers", { "x-amz-checksum-crc32": "DUoRhQ==", "x-amz-checksum-sha1": "AAAA" }, "InvalidRequest"],
    ["an algorithm header without a checksum", { "x-amz-sdk-checksum-algorithm": "CRC32" }, "InvalidRequest"],
    ["a wrong Content-MD5", { "content-md5": createHash("md5").update("x").digest("base64") }, "BadDigest"],
    ["a malformed Content-MD5", { "content-md5": "nope" }, "InvalidDigest"],
  ])("refuses %s", async (label, headers, code) => {
    const response = await raw({ method: "PUT", path: path(`header-${label}`), headers, body: hello });
    expect([response.status, errorCode(response.body)]).toEqual([400, code]);
    expect(stored(`header-${label}`)).toBeUndefined();
  });

  it("verifies CRC64NVME and Content-MD5 when they are right", async () => {
    const headers = {
      "x-amz-checksum-crc64nvme": checksumBase64("crc64nvme", hello),
      "content-md5": createHash("md5").update(hello).digest("base64"),
    };
    const response = await raw({ method: "PUT", path: path("crc64"), headers, body: hello });
    expect(response.status).toBe(200);
    expect(response.headers["x-amz-checksum-crc64nvme"]).toBe(headers["x-amz-checksum-crc64nvme"]);
  });

  it("refuses a body that does not match x-amz-content-sha256", async () => {
    const response = await raw({ method: "PUT", path: path("sha-mismatch"), body: hello, payloadHash: "0".repeat(64) });
    expect([response.status, errorCode(response.body)]).toEqual([400, "XAmzContentSHA256Mismatch"]);
  });

  it("refuses a plain PUT without any length with 411", async () => {
    const response = await raw({ method: "PUT", path: path("no-length"), body: hello, chunked: true });
    expect([response.status, errorCode(response.body)]).toEqual([411, "MissingContentLength"]);
  });
});

describe("reads", () => {
  const body = Buffer.from("0123456789");
  beforeAll(async () => {
    await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "digits", Body: body, ContentType: "text/plain", Metadata: { owner: "cairn" } }));
  });

  it("answers GET with ETag, Last-Modified, Content-Length, Accept-Ranges and stored metadata", async () => {
    const got = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits" }));
    expect(await got.Body!.transformToString()).toBe("0123456789");
    expect(got.ETag).toBe(`"${md5Hex(body)}"`);
    expect(got.ContentLength).toBe(10);
    expect(got.AcceptRanges).toBe("bytes");
    expect(got.ContentType).toBe("text/plain");
    expect(got.Metadata).toEqual({ owner: "cairn" });
    expect(got.ChecksumCRC32).toBe(checksumBase64("crc32", body));
    const response = await raw({ method: "GET", path: objectPath(endpoint.bucket, "digits") });
    expect(response.headers["last-modified"]).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(response.headers["date"]).toMatch(/GMT$/);
    expect(response.headers["x-amz-request-id"]).toMatch(/^[0-9A-F]{16}$/);
    expect(response.headers["x-amz-id-2"]).toBeTruthy();
  });

  it("serves ranges with 206 and Content-Range, and 416 InvalidRange beyond the end", async () => {
    const part = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", Range: "bytes=2-4" }));
    expect(await part.Body!.transformToString()).toBe("234");
    expect(part.ContentRange).toBe("bytes 2-4/10");
    expect(part.$metadata.httpStatusCode).toBe(206);
    const suffix = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", Range: "bytes=-3" }));
    expect(await suffix.Body!.transformToString()).toBe("789");
    expect(await s3FailureOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", Range: "bytes=10-" })))).toEqual({
      name: "InvalidRange",
      status: 416,
    });
  });

  it("answers 304 to a matching If-None-Match and 412 to a failing If-Match", async () => {
    const etag = `"${md5Hex(body)}"`;
    const notModified = await s3FailureOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", IfNoneMatch: etag })));
    expect(notModified.status).toBe(304);
    const other = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", IfNoneMatch: '"other"' }));
    expect(other.$metadata.httpStatusCode).toBe(200);
    await other.Body!.transformToString();
    expect(await s3FailureOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "digits", IfMatch: '"other"' })))).toEqual({
      name: "PreconditionFailed",
      status: 412,
    });
    const raw304 = await raw({ method: "GET", path: objectPath(endpoint.bucket, "digits"), headers: { "if-none-match": etag } });
    expect([raw304.status, raw304.body.length, raw304.headers.etag]).toEqual([304, 0, etag]);
  });

  it("answers HEAD with the same headers and no body; a missing key is 404 with and without a body", async () => {
    const head = await client.send(new HeadObjectCommand({ Bucket: endpoint.bucket, Key: "digits" }));
    expect([head.ContentLength, head.ETag]).toEqual([10, `"${md5Hex(body)}"`]);
    expect(await s3FailureOf(client.send(new HeadObjectCommand({ Bucket: endpoint.bucket, Key: "missing" })))).toEqual({
      name: "NotFound",
      status: 404,
    });
    const missing = await raw({ method: "GET", path: objectPath(endpoint.bucket, "missing/key") });
    expect(missing.status).toBe(404);
    expect(missing.headers["content-type"]).toBe("application/xml");
    expect(missing.body.toString()).toMatch(
      new RegExp(
        '^<\\?xml version="1.0" encoding="UTF-8"\\?><Error><Code>NoSuchKey</Code><Message>[^<]+</Message>' +
          "<Key>missing/key</Key><RequestId>[0-9A-F]{16}</RequestId><HostId>[^<]+</HostId></Error>$",
      ),
    );
  });

  it("deletes with 204, also for a missing key", async () => {
    await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "doomed", Body: "x" }));
    const deleted = await client.send(new DeleteObjectCommand({ Bucket: endpoint.bucket, Key: "doomed" }));
    expect(deleted.$metadata.httpStatusCode).toBe(204);
    expect(stored("doomed")).toBeUndefined();
    const again = await client.send(new DeleteObjectCommand({ Bucket: endpoint.bucket, Key: "doomed" }));
    expect(again.$metadata.httpStatusCode).toBe(204);
  });
});
