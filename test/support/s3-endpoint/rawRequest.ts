import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { S3EndpointCredentials } from "./endpointSettings.js";
import {
  amzDateOf,
  canonicalRequest,
  credentialScope,
  formatAuthorization,
  S3_SERVICE,
  sha256Hex,
  signature,
  stringToSign,
  uriEncode,
} from "./sigv4.js";

/**
 * A SigV4-signed HTTP request built by hand, for tests that must control the wire in ways
 * the SDK hides (a wrong trailer checksum, a missing Content-MD5, a skewed clock). Every
 * header given is signed, as are host, x-amz-date and x-amz-content-sha256.
 */

export interface RawS3Request {
  readonly method: string;
  /** Path and query exactly as sent, e.g. "/cairn-test/a%20b?x-id=PutObject" (see objectPath). */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers added after signing, left out of SignedHeaders. */
  readonly unsignedHeaders?: Readonly<Record<string, string>>;
  readonly body?: Uint8Array | string;
  /** Send the body with Transfer-Encoding: chunked instead of Content-Length. */
  readonly chunked?: boolean;
  /** The x-amz-content-sha256 value; default the hex SHA-256 of the body. */
  readonly payloadHash?: string;
  /** Credentials to sign with (default the endpoint's); `false` sends no Authorization header. */
  readonly credentials?: S3EndpointCredentials | false;
  /** Region to sign for; default the endpoint's. */
  readonly region?: string;
  /** Signing time in ms since the epoch; default now. */
  readonly signedAtMs?: number;
}

export interface RawS3Response {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface RawS3Target {
  readonly url: string;
  readonly region: string;
  readonly credentials: S3EndpointCredentials;
}

/** `/bucket/key` with the key RFC 3986-encoded and `/` kept literal, as the SDK sends it. */
export function objectPath(bucket: string, key: string): string {
  return `/${bucket}/${key.split("/").map(uriEncode).join("/")}`;
}

export function sendRawS3Request(target: RawS3Target, request: RawS3Request): Promise<RawS3Response> {
  const url = new URL(target.url);
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : Buffer.from(request.body ?? []);
  const headers = headersFor(target, request, body, url.host);
  return new Promise<RawS3Response>((resolve, reject) => {
    const outgoing = httpRequest(
      { host: url.hostname, port: url.port, method: request.method, path: request.path, headers, agent: false },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", () =>
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks) }),
        );
        incoming.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    if (request.chunked) {
      // Two writes, so the body really travels as more than one HTTP chunk.
      const half = Math.floor(body.length / 2);
      outgoing.write(body.subarray(0, half));
      outgoing.end(body.subarray(half));
    } else {
      outgoing.end(body);
    }
  });
}

function headersFor(target: RawS3Target, request: RawS3Request, body: Buffer, host: string): Record<string, string> {
  const headers: Record<string, string> = { host };
  Object.assign(headers, lowercaseNames(request.headers ?? {}));
  if (request.chunked) headers["transfer-encoding"] = "chunked";
  else headers["content-length"] = String(body.length);
  if (request.credentials === false) return { ...headers, ...lowercaseNames(request.unsignedHeaders ?? {}) };
  const credentials = request.credentials ?? target.credentials;
  const region = request.region ?? target.region;
  const amzDate = amzDateOf(request.signedAtMs ?? Date.now());
  headers["x-amz-date"] = amzDate;
  headers["x-amz-content-sha256"] = request.payloadHash ?? sha256Hex(body);
  const signedHeaders = Object.keys(headers)
    .filter((name) => name !== "transfer-encoding")
    .sort();
  const questionMark = request.path.indexOf("?");
  const canonical = canonicalRequest({
    method: request.method,
    rawPath: questionMark < 0 ? request.path : request.path.slice(0, questionMark),
    rawQuery: questionMark < 0 ? "" : request.path.slice(questionMark + 1),
    headers: Object.entries(headers),
    signedHeaders,
    payloadHash: headers["x-amz-content-sha256"],
  });
  if (canonical === undefined) throw new Error(`raw S3 request path has an invalid query: ${request.path}`);
  const scopeDate = amzDate.slice(0, 8);
  const toSign = stringToSign(amzDate, credentialScope(scopeDate, region, S3_SERVICE), canonical);
  headers["authorization"] = formatAuthorization({
    accessKeyId: credentials.accessKeyId,
    scopeDate,
    region,
    service: S3_SERVICE,
    signedHeaders,
    signature: signature(credentials.secretAccessKey, scopeDate, region, toSign),
  });
  return { ...headers, ...lowercaseNames(request.unsignedHeaders ?? {}) };
}

function lowercaseNames(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
