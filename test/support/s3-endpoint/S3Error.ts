/**
 * An S3 error answer: status, `<Code>`, `<Message>` and the extra XML children S3 adds
 * (`Key`, `Condition`, `BucketName` …). Operations throw it to stop early; the server
 * turns it into the error response of S3.md §1. It never leaves the endpoint.
 */
export class S3Error extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra children of `<Error>`, in order, placed between `<Message>` and `<RequestId>`. */
  readonly fields: readonly (readonly [name: string, value: string])[];
  /** Extra response headers (`Content-Range` on 416, …). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    code: string,
    message: string,
    fields: readonly (readonly [string, string])[] = [],
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "S3Error";
    this.status = status;
    this.code = code;
    this.fields = fields;
    this.headers = headers;
  }
}

export function isS3Error(error: unknown): error is S3Error {
  return error instanceof S3Error;
}

// ---- the errors more than one module raises -------------------------------------------

export function noSuchKey(key: string): S3Error {
  return new S3Error(404, "NoSuchKey", "The specified key does not exist.", [["Key", key]]);
}

export function noSuchBucket(bucket: string): S3Error {
  return new S3Error(404, "NoSuchBucket", "The specified bucket does not exist", [["BucketName", bucket]]);
}

/** `condition` undefined: no `<Condition>` element, as radosgw answers. */
export function preconditionFailed(condition: "If-Match" | "If-None-Match" | "If-Unmodified-Since" | undefined): S3Error {
  return new S3Error(
    412,
    "PreconditionFailed",
    "At least one of the pre-conditions you specified did not hold",
    condition === undefined ? [] : [["Condition", condition]],
  );
}

export function notImplemented(message: string, header?: string): S3Error {
  return new S3Error(
    501,
    "NotImplemented",
    message,
    header === undefined ? [] : [["Header", header]],
  );
}

export function invalidArgument(message: string, name?: string, value?: string): S3Error {
  const fields: [string, string][] = [];
  if (name !== undefined) fields.push(["ArgumentName", name]);
  if (value !== undefined) fields.push(["ArgumentValue", value]);
  return new S3Error(400, "InvalidArgument", message, fields);
}

export function invalidRequest(message: string): S3Error {
  return new S3Error(400, "InvalidRequest", message);
}

export function badDigest(message: string): S3Error {
  return new S3Error(400, "BadDigest", message);
}

export function malformedXml(): S3Error {
  return new S3Error(
    400,
    "MalformedXML",
    "The XML you provided was not well-formed or did not validate against our published schema",
  );
}

export function slowDown(): S3Error {
  return new S3Error(503, "SlowDown", "Please reduce your request rate.");
}

export function internalError(): S3Error {
  return new S3Error(500, "InternalError", "We encountered an internal error. Please try again.");
}

export function serviceUnavailable(): S3Error {
  return new S3Error(503, "ServiceUnavailable", "Please reduce your request rate.");
}

export function conditionalRequestConflict(key: string): S3Error {
  return new S3Error(
    409,
    "ConditionalRequestConflict",
    "The conditional request cannot succeed due to a conflicting operation against this resource.",
    [["Key", key]],
  );
}

/** R2's answer above one write per second to a key (code name as R2 documents it). */
export function tooManyRequests(key: string): S3Error {
  return new S3Error(429, "TooManyRequests", "Reduce your concurrent request rate for the same object.", [
    ["Key", key],
  ]);
}
