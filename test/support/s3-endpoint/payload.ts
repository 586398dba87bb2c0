import { createHash } from "node:crypto";
import { decodeAwsChunked } from "./awsChunked.js";
import type { StoredChecksum } from "./buckets.js";
import {
  CHECKSUM_ALGORITHMS,
  CHECKSUM_BYTES,
  CHECKSUM_DISPLAY_NAMES,
  checksumHeaderName,
  checksumOf,
  isChecksumAlgorithm,
  type ChecksumAlgorithm,
} from "./checksums.js";
import type { RequestHead } from "./requestHead.js";
import { S3Error, badDigest, invalidArgument, invalidRequest, notImplemented } from "./S3Error.js";
import { sha256Hex } from "./sigv4.js";

/**
 * Turns a request's wire body into the bytes S3 would store, checking every integrity
 * claim the request makes (S3.md §2): `x-amz-content-sha256` when it is a digest, the
 * aws-chunked framing with `x-amz-decoded-content-length` and its trailer, any
 * `x-amz-checksum-*` header, and `Content-MD5`. Mismatch → 400 BadDigest (or S3's
 * XAmzContentSHA256Mismatch for the SigV4 payload hash); malformed → 400 InvalidRequest.
 */

export interface Payload {
  readonly body: Uint8Array;
  /** The one checksum the request supplied (header or trailer), verified. */
  readonly checksum: StoredChecksum | undefined;
  /** Whether Content-MD5 or an `x-amz-checksum-*` value covered the body. */
  readonly integrityChecked: boolean;
}

export interface PayloadOptions {
  /** PutObject needs a length: Content-Length, or x-amz-decoded-content-length when streamed. */
  readonly lengthRequired: boolean;
  /**
   * Answer an aws-chunked upload with a trailer 411 MissingContentLength, as radosgw 16
   * does (it does not read x-amz-decoded-content-length). Default false.
   */
  readonly chunkedTrailerRefused?: boolean;
}

const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

type Framing = "hashed" | "unsigned" | "aws-chunked";

export function decodePayload(head: RequestHead, wire: Uint8Array, options: PayloadOptions): Payload {
  const payloadHash = head.header("x-amz-content-sha256") ?? "";
  const framing = framingOf(head, payloadHash);
  if (framing === "aws-chunked" && options.chunkedTrailerRefused === true && head.header("x-amz-trailer") !== undefined) {
    throw missingContentLength();
  }
  const { body, trailers } =
    framing === "aws-chunked" ? decodeStreamed(head, wire) : plainBody(head, wire, framing === "hashed", options);
  const checksum = verifyChecksum(head, body, trailers);
  const md5Checked = verifyContentMd5(head, body);
  return { body, checksum, integrityChecked: checksum !== undefined || md5Checked };
}

function framingOf(head: RequestHead, payloadHash: string): Framing {
  const chunkedEncoding = (head.header("content-encoding") ?? "").split(",").some((part) => part.trim() === "aws-chunked");
  let framing: Framing;
  if (/^[0-9a-fA-F]{64}$/.test(payloadHash)) framing = "hashed";
  else if (payloadHash === UNSIGNED_PAYLOAD) framing = "unsigned";
  else if (payloadHash === STREAMING_UNSIGNED_TRAILER) framing = "aws-chunked";
  else if (payloadHash.startsWith("STREAMING-")) {
    throw notImplemented(
      `Signed streaming payloads (${payloadHash}) are not implemented by the test endpoint; ` +
        `use ${STREAMING_UNSIGNED_TRAILER}`,
      "x-amz-content-sha256",
    );
  } else {
    throw invalidArgument(
      "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid sha256 value.",
      "x-amz-content-sha256",
      payloadHash,
    );
  }
  if (chunkedEncoding && framing !== "aws-chunked") {
    throw invalidRequest(`Content-Encoding aws-chunked requires x-amz-content-sha256: ${STREAMING_UNSIGNED_TRAILER}`);
  }
  return framing;
}

interface DecodedBody {
  readonly body: Uint8Array;
  readonly trailers: ReadonlyMap<string, string>;
}

function plainBody(head: RequestHead, wire: Uint8Array, hashed: boolean, options: PayloadOptions): DecodedBody {
  if (options.lengthRequired && head.header("content-length") === undefined) throw missingContentLength();
  if (hashed) checkPayloadHash(head.header("x-amz-content-sha256") ?? "", wire);
  return { body: wire, trailers: new Map() };
}

function checkPayloadHash(payloadHash: string, body: Uint8Array): void {
  const computed = sha256Hex(body);
  if (computed !== payloadHash.toLowerCase()) {
    throw new S3Error(
      400,
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
      [
        ["ClientComputedContentSHA256", payloadHash],
        ["S3ComputedContentSHA256", computed],
      ],
    );
  }
}

function decodeStreamed(head: RequestHead, wire: Uint8Array): DecodedBody {
  const decodedLengthText = head.header("x-amz-decoded-content-length");
  if (decodedLengthText === undefined) throw missingContentLength();
  if (!/^\d{1,15}$/.test(decodedLengthText)) {
    const name = "x-amz-decoded-content-length";
    throw invalidArgument(`${name} must be a non-negative integer`, name, decodedLengthText);
  }
  const declared = declaredTrailers(head);
  const decoded = decodeAwsChunked(wire);
  if (!decoded.ok) throw invalidRequest(`Malformed aws-chunked body: ${decoded.reason}`);
  if (decoded.data.length !== Number(decodedLengthText)) {
    throw new S3Error(
      400,
      "IncompleteBody",
      "You did not provide the number of bytes specified by the Content-Length HTTP header",
      [
        ["NumberBytesExpected", decodedLengthText],
        ["NumberBytesProvided", String(decoded.data.length)],
      ],
    );
  }
  for (const name of decoded.trailers.keys()) {
    if (!declared.includes(name)) throw invalidRequest(`The trailer ${name} was not declared in x-amz-trailer`);
  }
  for (const name of declared) {
    if (!decoded.trailers.has(name)) throw invalidRequest(`The trailer ${name} declared in x-amz-trailer is missing`);
  }
  return { body: decoded.data, trailers: decoded.trailers };
}

/** Names from `x-amz-trailer`; only checksum trailers are meaningful to S3. */
function declaredTrailers(head: RequestHead): string[] {
  const names = (head.header("x-amz-trailer") ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  for (const name of names) {
    const algorithm = name.startsWith("x-amz-checksum-") ? name.slice("x-amz-checksum-".length) : "";
    if (!isChecksumAlgorithm(algorithm)) {
      throw invalidRequest(`The value specified in the x-amz-trailer header is not supported: ${name}`);
    }
  }
  return names;
}

function verifyChecksum(
  head: RequestHead,
  body: Uint8Array,
  trailers: ReadonlyMap<string, string>,
): StoredChecksum | undefined {
  const supplied: StoredChecksum[] = [];
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const name = checksumHeaderName(algorithm);
    const headerValue = head.header(name);
    if (headerValue !== undefined) supplied.push({ algorithm, value: headerValue.trim() });
    const trailerValue = trailers.get(name);
    if (trailerValue !== undefined) supplied.push({ algorithm, value: trailerValue });
  }
  const sdkAlgorithm = sdkChecksumAlgorithm(head);
  if (supplied.length > 1) {
    throw invalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
  }
  const [checksum] = supplied;
  if (checksum === undefined) {
    if (sdkAlgorithm !== undefined) {
      throw invalidRequest(
        "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.",
      );
    }
    return undefined;
  }
  if (sdkAlgorithm !== undefined && sdkAlgorithm !== checksum.algorithm) {
    throw invalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.");
  }
  const claimed = decodeDigest(checksum.value, CHECKSUM_BYTES[checksum.algorithm]);
  if (claimed === undefined) throw invalidRequest(`Value for ${checksumHeaderName(checksum.algorithm)} header is invalid.`);
  if (!Buffer.from(checksumOf(checksum.algorithm, body)).equals(claimed)) {
    const name = CHECKSUM_DISPLAY_NAMES[checksum.algorithm];
    throw badDigest(`The ${name} you specified did not match the calculated checksum.`);
  }
  return checksum;
}

function sdkChecksumAlgorithm(head: RequestHead): ChecksumAlgorithm | undefined {
  const value = head.header("x-amz-sdk-checksum-algorithm");
  if (value === undefined) return undefined;
  const algorithm = value.trim().toLowerCase();
  if (!isChecksumAlgorithm(algorithm)) throw invalidRequest("Value for x-amz-sdk-checksum-algorithm header is invalid.");
  return algorithm;
}

/** Returns whether a Content-MD5 header was present (and matched). */
function verifyContentMd5(head: RequestHead, body: Uint8Array): boolean {
  const value = head.header("content-md5");
  if (value === undefined) return false;
  const claimed = decodeDigest(value.trim(), 16);
  if (claimed === undefined) throw new S3Error(400, "InvalidDigest", "The Content-MD5 you specified was invalid.");
  const computed = createHash("md5").update(body).digest();
  if (!computed.equals(claimed)) {
    throw new S3Error(400, "BadDigest", "The Content-MD5 you specified did not match what we received.", [
      ["ExpectedDigest", value.trim()],
      ["CalculatedDigest", computed.toString("base64")],
    ]);
  }
  return true;
}

/** Strict base64 of exactly `length` bytes, else undefined. */
function decodeDigest(value: string, length: number): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(value, "base64");
  return bytes.length === length ? bytes : undefined;
}

function missingContentLength(): S3Error {
  return new S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
}
