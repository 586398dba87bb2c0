import { timingSafeEqual } from "node:crypto";
import { REQUEST_TIME_SKEW_MS_MAX } from "./endpointLimits.js";
import type { RequestHead } from "./requestHead.js";
import { S3Error, invalidArgument, invalidRequest, notImplemented } from "./S3Error.js";
import {
  S3_SERVICE,
  canonicalRequest,
  credentialScope,
  parseAmzDate,
  parseAuthorization,
  signature,
  stringToSign,
  type ParsedAuthorization,
} from "./sigv4.js";

/**
 * Verifies a request's SigV4 header against the accepted credentials and answers with
 * S3's error for each way it can be wrong (S3.md §5). Checks run in S3's order: presence,
 * shape, key id, scope, time, then the signature itself.
 */

export interface AuthenticationContext {
  /** Secret access key per accepted access key id. */
  readonly secrets: ReadonlyMap<string, string>;
  readonly region: string;
  readonly nowMs: number;
}

/** Returns the access key id of a correctly signed request; throws the S3 error otherwise. */
export function authenticate(head: RequestHead, context: AuthenticationContext): string {
  const header = head.header("authorization");
  if (header === undefined) {
    if (/(^|&)X-Amz-Signature=/i.test(head.rawQuery)) {
      throw notImplemented("Presigned (query-string) authentication is not implemented by the test endpoint");
    }
    throw new S3Error(403, "AccessDenied", "Access Denied");
  }
  const authorization = parseAuthorization(header);
  if (authorization === undefined) {
    throw authorizationHeaderMalformed(
      "The authorization header is malformed; it must be AWS4-HMAC-SHA256 with Credential, SignedHeaders and Signature",
    );
  }
  const secret = context.secrets.get(authorization.accessKeyId);
  if (secret === undefined) {
    throw new S3Error(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.", [
      ["AWSAccessKeyId", authorization.accessKeyId],
    ]);
  }
  const amzDate = checkScopeAndTime(head, authorization, context);
  checkSignedHeaders(head, authorization);
  const payloadHash = head.header("x-amz-content-sha256");
  if (payloadHash === undefined) throw invalidRequest("Missing required header for this request: x-amz-content-sha256");
  const canonical = canonicalRequest({
    method: head.method,
    rawPath: head.rawPath,
    rawQuery: head.rawQuery,
    headers: head.headerList,
    signedHeaders: authorization.signedHeaders,
    payloadHash,
  });
  if (canonical === undefined) throw invalidArgument("The query string is not valid percent-encoding");
  const scope = credentialScope(authorization.scopeDate, authorization.region, authorization.service);
  const toSign = stringToSign(amzDate, scope, canonical);
  const expected = signature(secret, authorization.scopeDate, authorization.region, toSign);
  if (!timingSafeEqual(Buffer.from(expected), Buffer.from(authorization.signature))) {
    throw new S3Error(
      403,
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
      [
        ["AWSAccessKeyId", authorization.accessKeyId],
        ["StringToSign", toSign],
        ["SignatureProvided", authorization.signature],
        ["CanonicalRequest", canonical],
      ],
    );
  }
  return authorization.accessKeyId;
}

/** Returns the request's `x-amz-date` once scope and time are acceptable. */
function checkScopeAndTime(head: RequestHead, authorization: ParsedAuthorization, context: AuthenticationContext): string {
  if (authorization.service !== S3_SERVICE) {
    throw authorizationHeaderMalformed(
      `The authorization header is malformed; incorrect service "${authorization.service}". This endpoint belongs to "s3".`,
    );
  }
  if (authorization.region !== context.region) {
    throw new S3Error(
      400,
      "AuthorizationHeaderMalformed",
      `The authorization header is malformed; the region '${authorization.region}' is wrong; expecting '${context.region}'`,
      [["Region", context.region]],
    );
  }
  const amzDate = head.header("x-amz-date");
  const requestMs = amzDate === undefined ? undefined : parseAmzDate(amzDate);
  if (amzDate === undefined || requestMs === undefined) {
    throw new S3Error(403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
  }
  if (!amzDate.startsWith(authorization.scopeDate)) {
    throw authorizationHeaderMalformed("Invalid credential date. Date is not the same as X-Amz-Date.");
  }
  if (Math.abs(context.nowMs - requestMs) > REQUEST_TIME_SKEW_MS_MAX) {
    throw new S3Error(
      403,
      "RequestTimeTooSkewed",
      "The difference between the request time and the current time is too large.",
      [
        ["RequestTime", amzDate],
        ["ServerTime", new Date(context.nowMs).toISOString()],
        ["MaxAllowedSkewMilliseconds", String(REQUEST_TIME_SKEW_MS_MAX)],
      ],
    );
  }
  return amzDate;
}

/** `host` must be signed, and so must every `x-amz-*` header present. */
function checkSignedHeaders(head: RequestHead, authorization: ParsedAuthorization): void {
  const signed = new Set(authorization.signedHeaders);
  if (!signed.has("host")) {
    throw authorizationHeaderMalformed("The authorization header is malformed; SignedHeaders must include host");
  }
  const unsigned = [
    ...new Set(
      head.headerList.map(([name]) => name.toLowerCase()).filter((name) => name.startsWith("x-amz-") && !signed.has(name)),
    ),
  ];
  if (unsigned.length > 0) {
    throw new S3Error(403, "AccessDenied", "There were headers present in the request which were not signed", [
      ["HeadersNotSigned", unsigned.join(", ")],
    ]);
  }
}

function authorizationHeaderMalformed(message: string): S3Error {
  return new S3Error(400, "AuthorizationHeaderMalformed", message);
}
