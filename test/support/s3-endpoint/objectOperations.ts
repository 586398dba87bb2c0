import type { Bucket, StoredObject } from "./buckets.js";
import { parseByteRange } from "./byteRange.js";
import { checksumHeaderName } from "./checksums.js";
import { refusePut, type PutConditions } from "./conditionalPut.js";
import { R2_KEY_WRITE_INTERVAL_MS } from "./endpointLimits.js";
import { etagOf, quoteEtag } from "./etags.js";
import type { S3EndpointMode } from "./operations.js";
import type { Payload } from "./payload.js";
import { evaluateReadConditions } from "./readConditions.js";
import type { RequestHead } from "./requestHead.js";
import { emptyResponse, httpDate, type S3Response } from "./response.js";
import { S3Error, noSuchKey, preconditionFailed, tooManyRequests } from "./S3Error.js";

/**
 * PutObject, GetObject, HeadObject and DeleteObject on one key. Each runs synchronously
 * from its first read of the bucket to its write, which is what makes a conditional PUT
 * atomic (see buckets.ts).
 */

export interface ObjectRequest {
  readonly head: RequestHead;
  readonly bucket: Bucket;
  readonly key: string;
  readonly payload: Payload;
  readonly mode: S3EndpointMode;
  /** Real time of the request. */
  readonly nowMs: number;
}

/** Headers S3 stores with an object and returns on GET/HEAD. */
const STORED_HEADERS = ["cache-control", "content-disposition", "content-language", "expires"] as const;

export function putConditionsOf(head: RequestHead): PutConditions {
  return { ifMatch: head.header("if-match"), ifNoneMatch: head.header("if-none-match") };
}

export function putObject(request: ObjectRequest): S3Response {
  const { bucket, key, mode, nowMs } = request;
  const conditions = putConditionsOf(request.head);
  const current = bucket.get(key);
  const refusal = refusePut(mode, conditions, current, key);
  if (refusal !== undefined) throw refusal;
  if (mode === "r2" && current !== undefined && nowMs - current.lastModifiedMs < R2_KEY_WRITE_INTERVAL_MS) {
    throw tooManyRequests(key);
  }
  const object: StoredObject = {
    body: request.payload.body,
    etag: etagOf(request.payload.body),
    lastModifiedMs: nowMs,
    headers: storedHeadersOf(request.head),
    checksum: request.payload.checksum,
  };
  bucket.put(key, object);
  const headers: Record<string, string> = { etag: quoteEtag(object.etag) };
  if (object.checksum !== undefined) {
    headers[checksumHeaderName(object.checksum.algorithm)] = object.checksum.value;
    headers["x-amz-checksum-type"] = "FULL_OBJECT";
  }
  return emptyResponse(200, headers);
}

/** GetObject, or HeadObject when `includeBody` is false (same headers, no body). */
export function getObject(request: ObjectRequest, includeBody: boolean): S3Response {
  const object = request.bucket.get(request.key);
  if (object === undefined) throw noSuchKey(request.key);
  const { head } = request;
  const outcome = evaluateReadConditions(
    {
      ifMatch: head.header("if-match"),
      ifNoneMatch: head.header("if-none-match"),
      ifModifiedSince: head.header("if-modified-since"),
      ifUnmodifiedSince: head.header("if-unmodified-since"),
    },
    object,
  );
  const identity = { etag: quoteEtag(object.etag), "last-modified": httpDate(object.lastModifiedMs) };
  if (outcome.kind === "not-modified") return emptyResponse(304, identity);
  if (outcome.kind === "precondition-failed") throw preconditionFailed(outcome.condition);
  const size = object.body.length;
  const range = parseByteRange(head.header("range"), size);
  if (range.kind === "unsatisfiable") throw invalidRange(head.header("range") ?? "", size);
  const headers: Record<string, string> = { ...object.headers, ...identity, "accept-ranges": "bytes" };
  let body = object.body;
  let status = 200;
  if (range.kind === "part") {
    status = 206;
    body = object.body.subarray(range.start, range.endInclusive + 1);
    headers["content-range"] = `bytes ${range.start}-${range.endInclusive}/${size}`;
  } else if (object.checksum !== undefined && head.header("x-amz-checksum-mode") === "ENABLED") {
    headers[checksumHeaderName(object.checksum.algorithm)] = object.checksum.value;
    headers["x-amz-checksum-type"] = "FULL_OBJECT";
  }
  headers["content-length"] = String(body.length);
  return includeBody ? { status, headers, body } : { status, headers };
}

export function deleteObject(request: ObjectRequest): S3Response {
  request.bucket.delete(request.key);
  return emptyResponse(204);
}

function storedHeadersOf(head: RequestHead): Record<string, string> {
  const headers: Record<string, string> = { "content-type": head.header("content-type") ?? "binary/octet-stream" };
  for (const name of STORED_HEADERS) {
    const value = head.header(name);
    if (value !== undefined) headers[name] = value;
  }
  const encodings = (head.header("content-encoding") ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "" && part !== "aws-chunked");
  if (encodings.length > 0) headers["content-encoding"] = encodings.join(", ");
  for (const [name, value] of head.headerList) {
    const lower = name.toLowerCase();
    if (lower.startsWith("x-amz-meta-")) headers[lower] = value;
  }
  return headers;
}

function invalidRange(requested: string, size: number): S3Error {
  return new S3Error(
    416,
    "InvalidRange",
    "The requested range is not satisfiable",
    [
      ["RangeRequested", requested],
      ["ActualObjectSize", String(size)],
    ],
    { "content-range": `bytes */${size}` },
  );
}
