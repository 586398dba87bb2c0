/**
 * An operation's answer as a plain value; the server writes it to the socket. Operations
 * never touch the socket, so they can be reasoned about (and tested) as functions.
 */
export interface S3Response {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Omitted for HEAD, 204 and 304. */
  readonly body?: Uint8Array;
}

export function xmlResponse(status: number, xml: string, headers: Readonly<Record<string, string>> = {}): S3Response {
  return { status, headers: { "content-type": "application/xml", ...headers }, body: Buffer.from(xml, "utf8") };
}

export function emptyResponse(status: number, headers: Readonly<Record<string, string>> = {}): S3Response {
  return { status, headers };
}

/** RFC 1123 date, as Last-Modified carries it. */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
