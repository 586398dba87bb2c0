import { createHash, createHmac } from "node:crypto";

/**
 * AWS Signature Version 4 for S3 (S3.md §5): the canonical request, the string to sign
 * and the signing key. Shared by the endpoint's verifier and by the raw test client, so
 * that both compute exactly the same thing; the SDK tests prove it agrees with AWS's
 * signer.
 */

export const SIGV4_ALGORITHM = "AWS4-HMAC-SHA256";
export const S3_SERVICE = "s3";

export interface ParsedAuthorization {
  readonly accessKeyId: string;
  /** `yyyymmdd` of the credential scope. */
  readonly scopeDate: string;
  readonly region: string;
  readonly service: string;
  /** Lowercase header names, in the order given. */
  readonly signedHeaders: readonly string[];
  /** 64 lowercase hex digits. */
  readonly signature: string;
}

/** Header name/value pairs as received (Node's `rawHeaders`, paired up). */
export type HeaderList = readonly (readonly [name: string, value: string])[];

export interface CanonicalRequestInput {
  readonly method: string;
  /** The path exactly as sent on the wire, already percent-encoded. */
  readonly rawPath: string;
  /** The query string as sent, without `?`. */
  readonly rawQuery: string;
  readonly headers: HeaderList;
  readonly signedHeaders: readonly string[];
  /** The literal `x-amz-content-sha256` value. */
  readonly payloadHash: string;
}

/**
 * `AWS4-HMAC-SHA256 Credential=AK/date/region/s3/aws4_request, SignedHeaders=a;b,
 * Signature=hex`, fields separated by "," with optional spaces. Undefined if malformed.
 */
export function parseAuthorization(header: string): ParsedAuthorization | undefined {
  if (!header.startsWith(`${SIGV4_ALGORITHM} `)) return undefined;
  const fields = new Map<string, string>();
  for (const part of header.slice(SIGV4_ALGORITHM.length + 1).split(",")) {
    const equals = part.indexOf("=");
    if (equals <= 0) return undefined;
    fields.set(part.slice(0, equals).trim(), part.slice(equals + 1).trim());
  }
  const credential = fields.get("Credential")?.split("/");
  const signedHeaders = fields.get("SignedHeaders");
  const signature = fields.get("Signature");
  if (credential?.length !== 5 || signedHeaders === undefined || signature === undefined) return undefined;
  const [accessKeyId = "", scopeDate = "", region = "", service = "", terminator = ""] = credential;
  if (accessKeyId === "" || !/^\d{8}$/.test(scopeDate) || region === "" || terminator !== "aws4_request") {
    return undefined;
  }
  if (!/^[0-9a-f]{64}$/.test(signature) || signedHeaders === "") return undefined;
  return { accessKeyId, scopeDate, region, service, signedHeaders: signedHeaders.split(";"), signature };
}

export function formatAuthorization(authorization: ParsedAuthorization): string {
  const scope = credentialScope(authorization.scopeDate, authorization.region, authorization.service);
  return (
    `${SIGV4_ALGORITHM} Credential=${authorization.accessKeyId}/${scope}, ` +
    `SignedHeaders=${authorization.signedHeaders.join(";")}, Signature=${authorization.signature}`
  );
}

export function credentialScope(scopeDate: string, region: string, service: string): string {
  return `${scopeDate}/${region}/${service}/aws4_request`;
}

/** The canonical request, or undefined when the query string is not valid percent-encoding. */
export function canonicalRequest(input: CanonicalRequestInput): string | undefined {
  const query = canonicalQuery(input.rawQuery);
  if (query === undefined) return undefined;
  return [
    input.method,
    input.rawPath,
    query,
    canonicalHeaders(input.headers, input.signedHeaders),
    input.signedHeaders.join(";"),
    input.payloadHash,
  ].join("\n");
}

export function stringToSign(amzDate: string, scope: string, canonical: string): string {
  return [SIGV4_ALGORITHM, amzDate, scope, sha256Hex(canonical)].join("\n");
}

export function signature(secretAccessKey: string, scopeDate: string, region: string, toSign: string): string {
  return createHmac("sha256", signingKey(secretAccessKey, scopeDate, region)).update(toSign).digest("hex");
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** RFC 3986 encoding: everything but `A-Z a-z 0-9 - . _ ~` is percent-encoded. */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `yyyymmddTHHMMSSZ` for a time in milliseconds since the epoch. */
export function amzDateOf(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/** Milliseconds since the epoch of an `x-amz-date` value, or undefined if malformed. */
export function parseAmzDate(value: string): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second] = match;
  const ms = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  // Date.UTC rolls over out-of-range fields (month 13); a round trip rejects them.
  return amzDateOf(ms) === value ? ms : undefined;
}

function signingKey(secretAccessKey: string, scopeDate: string, region: string): Buffer {
  const dateKey = createHmac("sha256", `AWS4${secretAccessKey}`).update(scopeDate).digest();
  const regionKey = createHmac("sha256", dateKey).update(region).digest();
  const serviceKey = createHmac("sha256", regionKey).update(S3_SERVICE).digest();
  return createHmac("sha256", serviceKey).update("aws4_request").digest();
}

/** Pairs decoded, re-encoded per RFC 3986, sorted by name then value; `k` becomes `k=`. */
function canonicalQuery(rawQuery: string): string | undefined {
  const pairs: [string, string][] = [];
  for (const part of rawQuery.split("&")) {
    if (part === "") continue;
    const equals = part.indexOf("=");
    const rawName = equals < 0 ? part : part.slice(0, equals);
    const rawValue = equals < 0 ? "" : part.slice(equals + 1);
    try {
      pairs.push([uriEncode(decodeURIComponent(rawName)), uriEncode(decodeURIComponent(rawValue))]);
    } catch {
      return undefined;
    }
  }
  pairs.sort(([nameA, valueA], [nameB, valueB]) => compareAscii(nameA, nameB) || compareAscii(valueA, valueB));
  return pairs.map(([name, value]) => `${name}=${value}`).join("&");
}

/** Each signed header as `name:value`, values of repeated headers joined by ",", then an empty line. */
function canonicalHeaders(headers: HeaderList, signedHeaders: readonly string[]): string {
  const lines = signedHeaders.map((name) => {
    const values = headers
      .filter(([headerName]) => headerName.toLowerCase() === name)
      .map(([, value]) => value.trim().replace(/\s+/g, " "));
    return `${name}:${values.join(",")}\n`;
  });
  return lines.join("");
}

function compareAscii(left: string, right: string): number {
  if (left === right) return 0;
  return left < right ? -1 : 1;
}
