/**
 * Scenario: SigV4 and bucket addressing. Wrong secret, unknown key id, no Authorization,
 * wrong region, malformed header, unsigned x-amz-* header and a skewed clock each get
 * S3's answer; the SDK recovers from its own skewed clock using the Date header; several
 * credential pairs can be accepted; buckets are created, probed and reported missing.
 */
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { objectPath, s3ClientConfigFor, sendRawS3Request, startS3Endpoint, type S3Endpoint } from "./index.js";
import { s3FailureOf } from "../errorCode.js";

let endpoint: S3Endpoint;
const clients: S3Client[] = [];
const SECOND = { accessKeyId: "second-key", secretAccessKey: "second-secret" };

function clientWith(overrides: Partial<ConstructorParameters<typeof S3Client>[0]> = {}): S3Client {
  const client = new S3Client({ ...s3ClientConfigFor(endpoint), maxAttempts: 1, ...overrides });
  clients.push(client);
  return client;
}

const errorCode = (body: Buffer) => /<Code>([^<]*)<\/Code>/.exec(body.toString())?.[1];

beforeAll(async () => {
  endpoint = await startS3Endpoint({
    credentials: [{ accessKeyId: "cairn-test", secretAccessKey: "cairn-test-secret" }, SECOND],
    buckets: ["cairn-test", "other-bucket"],
  });
});

afterAll(async () => {
  for (const client of clients) client.destroy();
  await endpoint.close();
});

describe("SigV4", () => {
  const put = (client: S3Client) => client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "auth", Body: "x" }));

  it("accepts every configured credential pair", async () => {
    await put(clientWith());
    await put(clientWith({ credentials: SECOND }));
    expect(endpoint.credentials.accessKeyId).toBe("cairn-test");
  });

  it("refuses a wrong secret with SignatureDoesNotMatch", async () => {
    const client = clientWith({ credentials: { accessKeyId: "cairn-test", secretAccessKey: "wrong" } });
    expect(await s3FailureOf(put(client))).toEqual({ name: "SignatureDoesNotMatch", status: 403 });
  });

  it("refuses an unknown access key id with InvalidAccessKeyId", async () => {
    const client = clientWith({ credentials: { accessKeyId: "nobody", secretAccessKey: "x" } });
    expect(await s3FailureOf(put(client))).toEqual({ name: "InvalidAccessKeyId", status: 403 });
  });

  it("refuses a request signed for another region with AuthorizationHeaderMalformed", async () => {
    const client = clientWith({ region: "eu-west-1" });
    expect(await s3FailureOf(put(client))).toEqual({ name: "AuthorizationHeaderMalformed", status: 400 });
  });

  it("refuses an unsigned request with AccessDenied", async () => {
    const response = await sendRawS3Request(endpoint, {
      method: "GET",
      path: objectPath(endpoint.bucket, "auth"),
      credentials: false,
    });
    expect([response.status, errorCode(response.body)]).toEqual([403, "AccessDenied"]);
  });

  it("refuses a malformed Authorization header with AuthorizationHeaderMalformed", async () => {
    const response = await sendRawS3Request(endpoint, {
      method: "GET",
      path: objectPath(endpoint.bucket, "auth"),
      credentials: false,
      headers: { authorization: "AWS4-HMAC-SHA256 Credential=cairn-test", "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
    });
    expect([response.status, errorCode(response.body)]).toEqual([400, "AuthorizationHeaderMalformed"]);
  });

  it("refuses a body tampered with after signing (the signature covers x-amz-content-sha256)", async () => {
    const response = await sendRawS3Request(endpoint, {
      method: "PUT",
      path: objectPath(endpoint.bucket, "tampered"),
      body: "x",
      headers: { "x-amz-meta-note": "signed" },
    });
    expect(response.status).toBe(200);
    const wrongSecret = await sendRawS3Request(endpoint, {
      method: "PUT",
      path: objectPath(endpoint.bucket, "tampered"),
      body: "y",
      credentials: { accessKeyId: "cairn-test", secretAccessKey: "not-it" },
    });
    expect([wrongSecret.status, errorCode(wrongSecret.body)]).toEqual([403, "SignatureDoesNotMatch"]);
    // Newlines travel as numeric references so that no XML parser normalises them away.
    expect(wrongSecret.body.toString()).toContain("<CanonicalRequest>PUT&#10;/cairn-test/tampered&#10;");
  });

  it("refuses a request more than 15 minutes off with RequestTimeTooSkewed", async () => {
    const response = await sendRawS3Request(endpoint, {
      method: "GET",
      path: objectPath(endpoint.bucket, "auth"),
      signedAtMs: Date.now() - 20 * 60 * 1000,
    });
    expect([response.status, errorCode(response.body)]).toEqual([403, "RequestTimeTooSkewed"]);
    expect(Math.abs(Date.parse(String(response.headers.date)) - Date.now())).toBeLessThan(60_000);
  });

  it("lets the SDK correct its own skewed clock from the server's time", async () => {
    const client = clientWith({ systemClockOffset: -20 * 60 * 1000 });
    const list = () => client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket, MaxKeys: 1 }));
    expect(await s3FailureOf(list())).toEqual({ name: "RequestTimeTooSkewed", status: 403 });
    expect((await list()).$metadata.httpStatusCode).toBe(200);
  });

  it("requires every x-amz-* header to be signed", async () => {
    const path = objectPath(endpoint.bucket, "auth");
    const signed = await sendRawS3Request(endpoint, { method: "GET", path, headers: { "x-amz-checksum-mode": "ENABLED" } });
    expect(signed.status).toBe(200);
    const unsigned = await sendRawS3Request(endpoint, { method: "GET", path, unsignedHeaders: { "x-amz-checksum-mode": "ENABLED" } });
    expect([unsigned.status, errorCode(unsigned.body)]).toEqual([403, "AccessDenied"]);
    expect(unsigned.body.toString()).toContain("<HeadersNotSigned>x-amz-checksum-mode</HeadersNotSigned>");
  });
});

describe("buckets", () => {
  it("creates a bucket once; a second create is BucketAlreadyOwnedByYou", async () => {
    const client = clientWith();
    await client.send(new CreateBucketCommand({ Bucket: "made-by-sdk" }));
    expect((await client.send(new HeadBucketCommand({ Bucket: "made-by-sdk" }))).$metadata.httpStatusCode).toBe(200);
    expect(await s3FailureOf(client.send(new CreateBucketCommand({ Bucket: "made-by-sdk" })))).toEqual({
      name: "BucketAlreadyOwnedByYou",
      status: 409,
    });
    expect(await s3FailureOf(client.send(new CreateBucketCommand({ Bucket: "Bad_Name" })))).toEqual({
      name: "InvalidBucketName",
      status: 400,
    });
  });

  it("answers NoSuchBucket for every operation on a missing bucket", async () => {
    const client = clientWith();
    expect(await s3FailureOf(client.send(new GetObjectCommand({ Bucket: "no-such-bucket", Key: "k" })))).toEqual({
      name: "NoSuchBucket",
      status: 404,
    });
    expect(await s3FailureOf(client.send(new PutObjectCommand({ Bucket: "no-such-bucket", Key: "k", Body: "x" })))).toEqual({
      name: "NoSuchBucket",
      status: 404,
    });
    expect(await s3FailureOf(client.send(new ListObjectsV2Command({ Bucket: "no-such-bucket" })))).toEqual({
      name: "NoSuchBucket",
      status: 404,
    });
    expect((await s3FailureOf(client.send(new HeadBucketCommand({ Bucket: "no-such-bucket" })))).status).toBe(404);
  });

  it("keeps buckets apart and lets tests create one directly", async () => {
    const client = clientWith();
    await client.send(new PutObjectCommand({ Bucket: "other-bucket", Key: "k", Body: "other" }));
    expect(endpoint.peek(endpoint.bucket, "k")).toBeUndefined();
    endpoint.createBucket("direct-bucket");
    endpoint.createBucket("direct-bucket");
    await client.send(new PutObjectCommand({ Bucket: "direct-bucket", Key: "k", Body: "direct" }));
    expect(Buffer.from(endpoint.peek("direct-bucket", "k") ?? []).toString()).toBe("direct");
    expect(() => endpoint.createBucket("UPPER")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("refuses what it does not implement with 501 instead of half-serving it, after authenticating", async () => {
    const v1 = await sendRawS3Request(endpoint, { method: "GET", path: `/${endpoint.bucket}` });
    expect([v1.status, errorCode(v1.body)]).toEqual([501, "NotImplemented"]);
    const multipart = await sendRawS3Request(endpoint, { method: "POST", path: `${objectPath(endpoint.bucket, "big")}?uploads=` });
    expect([multipart.status, errorCode(multipart.body)]).toEqual([501, "NotImplemented"]);
    const tagging = await sendRawS3Request(endpoint, { method: "GET", path: `${objectPath(endpoint.bucket, "k")}?tagging=` });
    expect([tagging.status, errorCode(tagging.body)]).toEqual([501, "NotImplemented"]);
    const anonymous = await sendRawS3Request(endpoint, { method: "GET", path: `/${endpoint.bucket}`, credentials: false });
    expect([anonymous.status, errorCode(anonymous.body)]).toEqual([403, "AccessDenied"]);
  });

  it("validates its options with typed errors", async () => {
    await expect(startS3Endpoint({ buckets: [] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(startS3Endpoint({ credentials: [{ accessKeyId: "", secretAccessKey: "x" }] })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    await expect(startS3Endpoint({ seed: 1.5 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
