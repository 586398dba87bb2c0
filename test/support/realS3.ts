/**
 * The real S3 store that the test lanes use when CAIRN_TEST_S3_URL is set — MinIO, AWS
 * S3, R2 or Ceph radosgw (README: Object stores) — with the credentials of
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN). `npm run test:s3`
 * also sets CAIRN_TEST_S3_REQUIRED=1, so that a lane without a store fails rather than
 * skips.
 *
 * Bucket setup, prefix cleanup and cross-client read-backs go through the `minio` client,
 * an S3 client written independently of the AWS SDK that Cairn's adapter is built on: so
 * Cairn's own adapter is never the only client that has talked to the server, and a test
 * that Cairn's adapter got wrong cannot also clean up after itself wrongly.
 *
 * Every test works under its own prefix below the URL's prefix (`newTestPrefix`) and
 * removes everything under it afterwards (`removePrefix`).
 */
import { Client } from "minio";
import { parseStoreUrl } from "../../src/objectstore/parseStoreUrl.js";

export interface RealS3 {
  /** CAIRN_TEST_S3_URL as given. */
  readonly url: string;
  readonly bucket: string;
  /** The URL's key prefix: "" or ending in "/". */
  readonly prefix: string;
  readonly region: string;
  /** For test names and messages: bucket, prefix and endpoint, no credentials. */
  readonly description: string;
  readonly minio: Client;
}

const REQUIRED_VARIABLE = "CAIRN_TEST_S3_REQUIRED";

let configured: RealS3 | undefined | null = null;
let bucketReady: Promise<void> | undefined;
let prefixSequence = 0;
/** Distinguishes this process's prefixes from those of other runs sharing the bucket. */
const RUN_ID = `${Date.now().toString(36)}-${process.pid}`;

/** The configured store, or undefined when CAIRN_TEST_S3_URL is unset. */
export function realS3(): RealS3 | undefined {
  if (configured === null) configured = fromEnvironment(process.env);
  return configured;
}

/** Whether the lane must run against a real store (then a missing URL is a failure). */
export function realS3Required(): boolean {
  return process.env[REQUIRED_VARIABLE] === "1";
}

/** Throws unless a real store is configured; for the one test that guards each lane. */
export function assertRealS3Configured(): RealS3 {
  const s3 = realS3();
  if (s3 === undefined) {
    throw new Error(
      `${REQUIRED_VARIABLE}=1 (npm run test:s3) but CAIRN_TEST_S3_URL is not set: start a store — ` +
        "`../shared/real-s3/ceph-rgw.sh start DIR` or MinIO, see README: Object stores — and export its URL and credentials",
    );
  }
  return s3;
}

/** A fresh prefix, unique to this process and call, below the URL's prefix. */
export function newTestPrefix(label: string): string {
  prefixSequence += 1;
  return `${label}-${RUN_ID}/${prefixSequence}/`;
}

/** The store URL of `prefix` below the configured URL's prefix (same endpoint and parameters). */
export function storeUrlFor(s3: RealS3, prefix: string): string {
  const parsed = new URL(s3.url);
  const basePath = parsed.pathname.endsWith("/") ? parsed.pathname : `${parsed.pathname}/`;
  parsed.pathname = `${basePath}${prefix}`;
  return parsed.toString();
}

/** Creates the bucket if it is missing (once per process). */
export function ensureBucket(s3: RealS3): Promise<void> {
  bucketReady ??= (async () => {
    if (!(await s3.minio.bucketExists(s3.bucket))) await s3.minio.makeBucket(s3.bucket, s3.region);
  })();
  return bucketReady;
}

/** Every object key under `prefix` (below the URL's prefix), as stored in the bucket. */
export async function listWithMinio(s3: RealS3, prefix: string): Promise<string[]> {
  const stream = s3.minio.listObjectsV2(s3.bucket, s3.prefix + prefix, true);
  return new Promise<string[]>((resolve, reject) => {
    const names: string[] = [];
    stream.on("data", (item) => {
      if (item.name !== undefined) names.push(item.name);
    });
    stream.on("error", reject);
    stream.on("end", () => resolve(names));
  });
}

/** Removes every object under `prefix` (below the URL's prefix); returns how many there were. */
export async function removePrefix(s3: RealS3, prefix: string): Promise<number> {
  const names = await listWithMinio(s3, prefix);
  if (names.length === 0) return 0;
  // The answer lists only the keys that failed (a quiet DeleteObjects).
  const failed = (await s3.minio.removeObjects(s3.bucket, names)).filter((entry) => entry !== null && entry !== undefined);
  if (failed.length > 0) {
    throw new Error(`removing ${failed.length} of ${names.length} objects under ${prefix} failed: ${JSON.stringify(failed.slice(0, 3))}`);
  }
  const left = await listWithMinio(s3, prefix);
  if (left.length > 0) throw new Error(`${left.length} objects are still under ${prefix} after removing them`);
  return names.length;
}

/** A key's bytes and etag (quotes stripped) as the minio client reads them; key below the URL's prefix. */
export async function readWithMinio(s3: RealS3, key: string): Promise<{ body: Buffer; etag: string }> {
  const fullKey = s3.prefix + key;
  const stat = await s3.minio.statObject(s3.bucket, fullKey);
  const stream = await s3.minio.getObject(s3.bucket, fullKey);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return { body: Buffer.concat(chunks), etag: stat.etag.replace(/^"|"$/g, "") };
}

/** Writes a key with the minio client (a plain PUT); returns its etag, quotes stripped. */
export async function writeWithMinio(s3: RealS3, key: string, body: Buffer): Promise<string> {
  const written = await s3.minio.putObject(s3.bucket, s3.prefix + key, body, body.length);
  return written.etag.replace(/^"|"$/g, "");
}

function fromEnvironment(environment: Readonly<Record<string, string | undefined>>): RealS3 | undefined {
  const url = environment.CAIRN_TEST_S3_URL;
  if (url === undefined || url === "") return undefined;
  const location = parseStoreUrl(url);
  if (location.kind !== "s3") throw new Error(`CAIRN_TEST_S3_URL must be an s3:// URL, not ${url}`);
  const accessKey = environment.AWS_ACCESS_KEY_ID;
  const secretKey = environment.AWS_SECRET_ACCESS_KEY;
  if (accessKey === undefined || secretKey === undefined) {
    throw new Error("CAIRN_TEST_S3_URL is set but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not");
  }
  const region = location.region ?? environment.AWS_REGION ?? environment.AWS_DEFAULT_REGION ?? "us-east-1";
  const endpoint = new URL(location.endpoint ?? `https://s3.${region}.amazonaws.com`);
  const useSSL = endpoint.protocol === "https:";
  const sessionToken = environment.AWS_SESSION_TOKEN;
  const minio = new Client({
    endPoint: endpoint.hostname,
    port: endpoint.port === "" ? (useSSL ? 443 : 80) : Number(endpoint.port),
    useSSL,
    accessKey,
    secretKey,
    ...(sessionToken === undefined ? {} : { sessionToken }),
    region,
    pathStyle: location.forcePathStyle ?? location.endpoint !== undefined,
  });
  const where = location.endpoint === undefined ? "" : ` at ${location.endpoint}`;
  return {
    url,
    bucket: location.bucket,
    prefix: location.prefix,
    region,
    description: `s3://${location.bucket}/${location.prefix}${where}`,
    minio,
  };
}
