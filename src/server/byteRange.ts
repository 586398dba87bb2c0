/**
 * What a GET's `Range` (RFC 9110 §14) asks of a file of `size` bytes:
 * - `whole`: send the full 200 — no Range, a Range that does not parse, one that is
 *   invalid (`bytes=5-3`), another unit than bytes, several ranges, or an empty file.
 *   RFC 9110 §14.2 lets a server ignore any Range; ignoring is always a correct answer.
 * - `slice`: send bytes `start` to `end` (inclusive, both within the file) as a 206.
 * - `unsatisfiable`: a well-formed range that starts at or past the end (`bytes=999-` of a
 *   10-byte file) or a zero-length suffix (`bytes=-0`): a 416.
 *
 * Several ranges (`bytes=0-1,5-6`) get the full 200: a multipart/byteranges answer is
 * rarely asked for (download managers and media players ask for one range), and ranges by
 * the thousand, overlapping or out of order are a known way to make a server send a file
 * many times over (CVE-2011-3192); the whole file once is the simplest correct answer.
 * Positions are read as BigInt, so a position of any number of digits is compared exactly.
 */
export type ByteRange =
  | { readonly kind: "whole" }
  | { readonly kind: "slice"; readonly start: number; readonly end: number }
  | { readonly kind: "unsatisfiable" };

const WHOLE: ByteRange = { kind: "whole" };
const UNSATISFIABLE: ByteRange = { kind: "unsatisfiable" };
/** `bytes=` (the unit is case-insensitive) then the range set. */
const BYTES_UNIT = /^bytes=/i;
/** One range: `first-last`, `first-` or `-suffixLength`, digits only. */
const RANGE_SPEC = /^(\d*)-(\d*)$/;

export function byteRangeOf(range: string | undefined, size: number): ByteRange {
  if (range === undefined || size === 0 || !BYTES_UNIT.test(range)) return WHOLE;
  // Empty list elements (`bytes=0-9,`) are allowed by RFC 9110 §5.6.1 and count for nothing.
  const specs = range.slice("bytes=".length).split(",").map((spec) => spec.trim()).filter((spec) => spec !== "");
  if (specs.length !== 1) return WHOLE;
  const match = RANGE_SPEC.exec(specs[0]!);
  if (match === null) return WHOLE;
  const [, first, last] = match as unknown as [string, string, string];
  const length = BigInt(size);
  if (first === "") {
    if (last === "") return WHOLE;
    const suffixLength = BigInt(last);
    if (suffixLength === 0n) return UNSATISFIABLE;
    return { kind: "slice", start: suffixLength >= length ? 0 : Number(length - suffixLength), end: size - 1 };
  }
  const start = BigInt(first);
  if (last !== "" && BigInt(last) < start) return WHOLE;
  if (start >= length) return UNSATISFIABLE;
  const end = last === "" || BigInt(last) >= length ? size - 1 : Number(BigInt(last));
  return { kind: "slice", start: Number(start), end };
}

/**
 * Whether a request's `If-Range` lets its Range apply to the file whose strong ETag is
 * `etag`: no If-Range, or one naming exactly that ETag (RFC 9110 §13.1.5 asks for the strong
 * comparison, so a weak tag never matches). A date is never taken: the server sends no
 * Last-Modified, so a date cannot be checked against the file, and the full 200 is the
 * safe answer (a client resuming a download of an older version gets the new one whole).
 */
export function ifRangeHolds(ifRange: string | readonly string[] | undefined, etag: string): boolean {
  return ifRange === undefined || (typeof ifRange === "string" && ifRange.trim() === etag);
}
