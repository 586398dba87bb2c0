/**
 * The S3 operations the endpoint answers and the store flavours it can imitate. Both are
 * `as const` arrays so that option validation and the types share one source.
 */

export const S3_OPERATIONS = [
  "PutObject",
  "GetObject",
  "HeadObject",
  "DeleteObject",
  "DeleteObjects",
  "ListObjectsV2",
  "CreateBucket",
  "HeadBucket",
] as const;

export type S3Operation = (typeof S3_OPERATIONS)[number];

/**
 * - `aws`: AWS S3 as described in S3.md.
 * - `r2`: Cloudflare R2: If-Match on a missing key is 412; a PutObject that passes its
 *   conditions within a second (real time) of the key's last write is 429; the
 *   conditional headers AWS refuses are accepted.
 * - `legacy-minio`: MinIO before RELEASE.2025-09-06: If-Match on a missing key creates
 *   it. Cairn must refuse to run on such a store.
 * - `radosgw`: Ceph radosgw 16.2 (checked against 16.2.15): If-Match and If-None-Match
 *   etags are compared with the stored, unquoted etag without stripping quotes (leading
 *   blanks skipped, then strncmp over the stored etag's length), so a quoted etag never
 *   matches and a bare one does; If-Match on a missing key is 412; a 412 carries no
 *   `<Condition>`; the conditional headers AWS refuses are accepted; an aws-chunked
 *   upload with a trailer is 411 MissingContentLength. Its 500 to losers of racing
 *   If-Match PUTs is the fault rule `lostRace500Rate`.
 */
export const S3_ENDPOINT_MODES = ["aws", "r2", "legacy-minio", "radosgw"] as const;

export type S3EndpointMode = (typeof S3_ENDPOINT_MODES)[number];

export function isS3Operation(value: unknown): value is S3Operation {
  return typeof value === "string" && (S3_OPERATIONS as readonly string[]).includes(value);
}

export function isS3EndpointMode(value: unknown): value is S3EndpointMode {
  return typeof value === "string" && (S3_ENDPOINT_MODES as readonly string[]).includes(value);
}
