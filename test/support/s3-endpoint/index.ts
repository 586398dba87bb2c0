/**
 * The S3 test endpoint: an in-memory HTTP server that speaks the S3 wire protocol as
 * `@aws-sdk/client-s3` uses it (S3.md §1–6), so that the S3 adapter, the conformance
 * suite and the benchmarks run against real HTTP, real SigV4 and real SDK retries
 * without AWS. It reproduces conditional PutObject per store flavour (`aws`, `r2`,
 * `legacy-minio`, `radosgw`), aws-chunked uploads with trailer checksums, every
 * `x-amz-checksum-*` algorithm, ranges and conditional GETs, ListObjectsV2 paging,
 * DeleteObjects, SigV4 errors, R2's one-write-per-second 429 and radosgw's verbatim
 * If-Match and 411 to trailers, and adds fault injection (latency: fixed, uniform or
 * lognormal with a per-MiB size cost; 503/500/409,
 * commit-then-drop, commit-then-5xx, radosgw's 500 to race losers, pause) and
 * per-operation counters priced at S3 Standard request rates. It deliberately does not implement multipart upload, CopyObject,
 * versioning, ACLs and policies, object lock, tagging, ListObjects v1, ListBuckets,
 * DeleteBucket, presigned URLs, signed streaming payloads
 * (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`), virtual-hosted-style addressing (path style
 * only) or TLS; requests for those it can recognise are refused with 501 NotImplemented
 * rather than half-served. All state lives in memory and is lost on close().
 */

export type { S3EndpointMode, S3Operation } from "./operations.js";
export { S3_ENDPOINT_MODES, S3_OPERATIONS } from "./operations.js";
export type { S3Endpoint } from "./S3Endpoint.js";
export type { S3EndpointCredentials, S3EndpointOptions } from "./endpointSettings.js";
export { startS3Endpoint, s3ClientConfigFor } from "./S3Endpoint.js";
export type { AfterCommitStatus, FaultController, FaultRule, LatencyModel, RequestFilter } from "./faults.js";
export type { OperationCounters } from "./counters.js";
export { REQUEST_PRICE_DOLLARS } from "./counters.js";
export type { RawS3Request, RawS3Response, RawS3Target } from "./rawRequest.js";
export { objectPath, sendRawS3Request } from "./rawRequest.js";
export { encodeAwsChunked } from "./awsChunked.js";
