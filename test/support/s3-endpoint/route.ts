import { OBJECT_KEY_BYTES_MAX } from "./endpointLimits.js";
import type { S3Operation } from "./operations.js";
import type { RequestHead } from "./requestHead.js";
import { S3Error, invalidArgument, notImplemented } from "./S3Error.js";

/**
 * Path-style routing: `/bucket` or `/bucket/` addresses the bucket, `/bucket/key…` an
 * object. The key is percent-decoded exactly once; `.`, `..` and `//` stay literal parts
 * of it. Requests for S3 features the endpoint does not have are refused with 501 rather
 * than half-served, so a test never passes on a silently ignored parameter.
 */

export interface Route {
  readonly operation: S3Operation;
  readonly bucket: string;
  /** The decoded object key; undefined for bucket-level operations. */
  readonly key: string | undefined;
  /** Decoded query parameters (first value wins). `x-id` is allowed everywhere and ignored. */
  readonly query: ReadonlyMap<string, string>;
}

const ALLOWED_QUERY: Readonly<Record<S3Operation, readonly string[]>> = {
  PutObject: ["x-id"],
  GetObject: ["x-id"],
  HeadObject: ["x-id"],
  DeleteObject: ["x-id"],
  DeleteObjects: ["x-id", "delete"],
  ListObjectsV2: [
    "x-id",
    "list-type",
    "prefix",
    "delimiter",
    "max-keys",
    "continuation-token",
    "start-after",
    "encoding-type",
    "fetch-owner",
  ],
  CreateBucket: ["x-id"],
  HeadBucket: ["x-id"],
};

/** The operation a request addresses; throws the S3 error for anything the endpoint does not serve. */
export function routeOf(head: RequestHead): Route {
  const query = parseQuery(head.rawQuery);
  const path = head.rawPath.startsWith("/") ? head.rawPath.slice(1) : head.rawPath;
  const slash = path.indexOf("/");
  const bucket = decodePathPart(slash < 0 ? path : path.slice(0, slash));
  const rawKey = slash < 0 ? "" : path.slice(slash + 1);
  if (bucket === "") throw notImplemented("Service-level operations (ListBuckets) are not implemented by the test endpoint");
  const operation = rawKey === "" ? bucketOperation(head, query) : objectOperation(head);
  const key = rawKey === "" ? undefined : decodeKey(rawKey);
  checkQuery(operation, query);
  return { operation, bucket, key, query };
}

function bucketOperation(head: RequestHead, query: ReadonlyMap<string, string>): S3Operation {
  switch (head.method) {
    case "GET":
      if (query.get("list-type") === "2") return "ListObjectsV2";
      throw notImplemented("Only ListObjectsV2 (list-type=2) is implemented on buckets by the test endpoint");
    case "HEAD":
      return "HeadBucket";
    case "PUT":
      return "CreateBucket";
    case "POST":
      if (query.has("delete")) return "DeleteObjects";
      throw notImplemented("Only DeleteObjects (?delete) is implemented as a bucket POST by the test endpoint");
    case "DELETE":
      throw notImplemented("DeleteBucket is not implemented by the test endpoint");
    default:
      throw methodNotAllowed(head.method, "BUCKET");
  }
}

function objectOperation(head: RequestHead): S3Operation {
  switch (head.method) {
    case "PUT":
      if (head.header("x-amz-copy-source") !== undefined) {
        throw notImplemented("CopyObject is not implemented by the test endpoint", "x-amz-copy-source");
      }
      return "PutObject";
    case "GET":
      return "GetObject";
    case "HEAD":
      return "HeadObject";
    case "DELETE":
      return "DeleteObject";
    case "POST":
      throw notImplemented("Multipart upload and other object POSTs are not implemented by the test endpoint");
    default:
      throw methodNotAllowed(head.method, "OBJECT");
  }
}

function checkQuery(operation: S3Operation, query: ReadonlyMap<string, string>): void {
  const allowed = ALLOWED_QUERY[operation];
  for (const name of query.keys()) {
    if (!allowed.includes(name)) {
      throw notImplemented(`The test endpoint does not implement the "${name}" query parameter for ${operation}`);
    }
  }
}

function parseQuery(rawQuery: string): Map<string, string> {
  const query = new Map<string, string>();
  for (const part of rawQuery.split("&")) {
    if (part === "") continue;
    const equals = part.indexOf("=");
    const name = decodeQueryPart(equals < 0 ? part : part.slice(0, equals));
    const value = decodeQueryPart(equals < 0 ? "" : part.slice(equals + 1));
    if (!query.has(name)) query.set(name, value);
  }
  return query;
}

function decodeQueryPart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw invalidArgument("The query string is not valid percent-encoding", "query", text);
  }
}

function decodePathPart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new S3Error(400, "InvalidURI", "Couldn't parse the specified URI.", [["URI", text]]);
  }
}

function decodeKey(rawKey: string): string {
  const key = decodePathPart(rawKey);
  const size = Buffer.byteLength(key, "utf8");
  if (size > OBJECT_KEY_BYTES_MAX) {
    throw new S3Error(400, "KeyTooLongError", "Your key is too long", [
      ["MaxSizeAllowed", String(OBJECT_KEY_BYTES_MAX)],
      ["Size", String(size)],
    ]);
  }
  return key;
}

function methodNotAllowed(method: string, resourceType: string): S3Error {
  return new S3Error(405, "MethodNotAllowed", "The specified method is not allowed against this resource.", [
    ["Method", method],
    ["ResourceType", resourceType],
  ]);
}
