import type { Bucket, StoredObject } from "./buckets.js";
import { LIST_PAGE_KEYS_MAX } from "./endpointLimits.js";
import { quoteEtag } from "./etags.js";
import { invalidArgument } from "./S3Error.js";
import { uriEncode } from "./sigv4.js";
import { element, parent, s3Document } from "./xml.js";

/**
 * ListObjectsV2 (S3.md §4): prefix, delimiter (rolled up into CommonPrefixes), max-keys,
 * opaque continuation tokens and start-after, keys in UTF-8 byte order, and the XML
 * answer.
 *
 * A page never ends on a half-listed common prefix: the token remembers whether the last
 * entry was a key or a prefix, and resuming after a prefix skips every key under it.
 */

export interface ListRequest {
  readonly prefix: string;
  readonly delimiter: string | undefined;
  readonly maxKeys: number;
  readonly startAfter: string | undefined;
  /** Exactly as received, echoed back. */
  readonly continuationToken: string | undefined;
  readonly resumeAfter: ListPosition | undefined;
  readonly urlEncoded: boolean;
}

/** Where the previous page stopped. */
export type ListPosition =
  | { readonly kind: "key"; readonly key: string }
  | { readonly kind: "prefix"; readonly prefix: string };

export interface ListPage {
  readonly contents: readonly { readonly key: string; readonly object: StoredObject }[];
  readonly commonPrefixes: readonly string[];
  readonly next: ListPosition | undefined;
}

export function parseListRequest(query: ReadonlyMap<string, string>): ListRequest {
  const token = query.get("continuation-token");
  if (token === "") throw invalidArgument("The continuation token provided is incorrect", "continuation-token", token);
  const encodingType = query.get("encoding-type");
  if (encodingType !== undefined && encodingType !== "url") {
    throw invalidArgument("Invalid Encoding Method specified in Request", "encoding-type", encodingType);
  }
  const fetchOwner = query.get("fetch-owner");
  if (fetchOwner !== undefined && fetchOwner !== "false") {
    throw invalidArgument("The test endpoint does not return owners; fetch-owner must be false", "fetch-owner", fetchOwner);
  }
  const delimiter = query.get("delimiter");
  return {
    prefix: query.get("prefix") ?? "",
    delimiter: delimiter === "" ? undefined : delimiter,
    maxKeys: parseMaxKeys(query.get("max-keys")),
    startAfter: query.get("start-after"),
    continuationToken: token,
    resumeAfter: token === undefined ? undefined : decodeToken(token),
    urlEncoded: encodingType === "url",
  };
}

export function listPage(bucket: Bucket, request: ListRequest): ListPage {
  const contents: { key: string; object: StoredObject }[] = [];
  const commonPrefixes: string[] = [];
  if (request.maxKeys === 0) return { contents, commonPrefixes, next: undefined };
  let last: ListPosition | undefined;
  let index = startIndex(bucket, request);
  for (let key = bucket.keyAt(index); key !== undefined && key.startsWith(request.prefix); key = bucket.keyAt(index)) {
    if (contents.length + commonPrefixes.length === request.maxKeys) return { contents, commonPrefixes, next: last };
    const rolledUp = commonPrefixOf(key, request);
    if (rolledUp === undefined) {
      contents.push({ key, object: bucket.get(key) as StoredObject });
      last = { kind: "key", key };
      index++;
    } else {
      commonPrefixes.push(rolledUp);
      last = { kind: "prefix", prefix: rolledUp };
      index = bucket.firstIndexPastPrefix(rolledUp);
    }
  }
  return { contents, commonPrefixes, next: undefined };
}

export function listResultXml(bucketName: string, request: ListRequest, page: ListPage): string {
  const encode = (text: string) => (request.urlEncoded ? uriEncode(text).replace(/%2F/g, "/") : text);
  const children = [
    element("Name", bucketName),
    element("Prefix", encode(request.prefix)),
    request.delimiter === undefined ? "" : element("Delimiter", encode(request.delimiter)),
    element("MaxKeys", request.maxKeys),
    request.urlEncoded ? element("EncodingType", "url") : "",
    element("KeyCount", page.contents.length + page.commonPrefixes.length),
    element("IsTruncated", page.next !== undefined),
    request.continuationToken === undefined ? "" : element("ContinuationToken", request.continuationToken),
    request.startAfter === undefined ? "" : element("StartAfter", encode(request.startAfter)),
    page.next === undefined ? "" : element("NextContinuationToken", encodeToken(page.next)),
    ...page.contents.map(({ key, object }) =>
      parent(
        "Contents",
        element("Key", encode(key)) +
          element("LastModified", new Date(object.lastModifiedMs).toISOString()) +
          element("ETag", quoteEtag(object.etag)) +
          element("Size", object.body.length) +
          element("StorageClass", "STANDARD"),
      ),
    ),
    ...page.commonPrefixes.map((prefix) => parent("CommonPrefixes", element("Prefix", encode(prefix)))),
  ];
  return s3Document("ListBucketResult", children.join(""));
}

/** The first position to consider: after the token's position, else after start-after, never before the prefix. */
function startIndex(bucket: Bucket, request: ListRequest): number {
  const atPrefix = bucket.firstIndexAtOrAfter(request.prefix);
  const resume = request.resumeAfter;
  let afterMarker: number;
  if (resume?.kind === "prefix") afterMarker = bucket.firstIndexPastPrefix(resume.prefix);
  else if (resume?.kind === "key") afterMarker = bucket.firstIndexAfter(resume.key);
  else if (request.startAfter !== undefined) afterMarker = bucket.firstIndexAfter(request.startAfter);
  else afterMarker = 0;
  return Math.max(atPrefix, afterMarker);
}

/** The common prefix a key rolls up into: the prefix plus everything up to and including the next delimiter. */
function commonPrefixOf(key: string, request: ListRequest): string | undefined {
  if (request.delimiter === undefined) return undefined;
  const at = key.indexOf(request.delimiter, request.prefix.length);
  return at < 0 ? undefined : key.slice(0, at + request.delimiter.length);
}

function parseMaxKeys(value: string | undefined): number {
  if (value === undefined) return LIST_PAGE_KEYS_MAX;
  if (!/^\d{1,10}$/.test(value)) {
    throw invalidArgument("Provided max-keys not an integer or within integer range", "max-keys", value);
  }
  return Math.min(Number(value), LIST_PAGE_KEYS_MAX);
}

// Tokens are opaque to clients: base64url of a kind marker and the position.
const TOKEN_KEY = "k:";
const TOKEN_PREFIX = "p:";

function encodeToken(position: ListPosition): string {
  const text = position.kind === "key" ? TOKEN_KEY + position.key : TOKEN_PREFIX + position.prefix;
  return Buffer.from(text, "utf8").toString("base64url");
}

function decodeToken(token: string): ListPosition {
  const text = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  if (text.startsWith(TOKEN_KEY)) return { kind: "key", key: text.slice(TOKEN_KEY.length) };
  if (text.startsWith(TOKEN_PREFIX)) return { kind: "prefix", prefix: text.slice(TOKEN_PREFIX.length) };
  throw invalidArgument("The continuation token provided is incorrect", "continuation-token", token);
}
