import { AWS_CHUNK_BYTES_MAX } from "./endpointLimits.js";

/**
 * Decoder for the `aws-chunked` content encoding, applied after HTTP has removed its own
 * chunking (S3.md §2):
 *
 *   <hex-size>[;extensions]\r\n<size bytes>\r\n … 0\r\n[<name>:<value>\r\n]*\r\n
 *
 * Chunk extensions (`;chunk-signature=…`) are read past, not verified: the endpoint only
 * accepts the unsigned streaming variant. Nothing may follow the final empty line.
 */

export type AwsChunkedResult =
  | { readonly ok: true; readonly data: Uint8Array; readonly trailers: ReadonlyMap<string, string> }
  | { readonly ok: false; readonly reason: string };

const CR = 0x0d;
const LF = 0x0a;

export function decodeAwsChunked(wire: Uint8Array): AwsChunkedResult {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (;;) {
    const line = readLine(wire, offset);
    if (line === undefined) return failure("a chunk header is not terminated by CRLF");
    const size = parseChunkSize(line.text);
    if (size === undefined) return failure(`invalid chunk header ${JSON.stringify(line.text)}`);
    offset = line.next;
    if (size === 0) break;
    if (offset + size + 2 > wire.length) return failure("a chunk is shorter than its declared size");
    if (wire[offset + size] !== CR || wire[offset + size + 1] !== LF) {
      return failure("a chunk's data is not followed by CRLF");
    }
    chunks.push(wire.subarray(offset, offset + size));
    offset += size + 2;
  }
  const trailers = readTrailers(wire, offset);
  if (!trailers.ok) return trailers;
  return { ok: true, data: Buffer.concat(chunks), trailers: trailers.trailers };
}

function readTrailers(
  wire: Uint8Array,
  start: number,
): { readonly ok: true; readonly trailers: Map<string, string> } | { readonly ok: false; readonly reason: string } {
  const trailers = new Map<string, string>();
  let offset = start;
  for (;;) {
    const line = readLine(wire, offset);
    if (line === undefined) return failure("the trailer section is not terminated by an empty line");
    offset = line.next;
    if (line.text === "") break;
    const colon = line.text.indexOf(":");
    if (colon <= 0) return failure(`invalid trailer line ${JSON.stringify(line.text)}`);
    trailers.set(line.text.slice(0, colon).trim().toLowerCase(), line.text.slice(colon + 1).trim());
  }
  if (offset !== wire.length) return failure("bytes follow the end of the aws-chunked body");
  return { ok: true, trailers };
}

function readLine(wire: Uint8Array, offset: number): { readonly text: string; readonly next: number } | undefined {
  for (let index = offset; index + 1 < wire.length; index++) {
    if (wire[index] === CR && wire[index + 1] === LF) {
      return { text: Buffer.from(wire.subarray(offset, index)).toString("latin1"), next: index + 2 };
    }
  }
  return undefined;
}

function parseChunkSize(header: string): number | undefined {
  const sizeText = header.split(";", 1)[0] ?? "";
  if (!/^[0-9a-fA-F]{1,16}$/.test(sizeText)) return undefined;
  const size = parseInt(sizeText, 16);
  return size <= AWS_CHUNK_BYTES_MAX ? size : undefined;
}

function failure(reason: string): { readonly ok: false; readonly reason: string } {
  return { ok: false, reason };
}

/** Encodes chunks and trailers the way the SDK does; for raw test requests. */
export function encodeAwsChunked(chunks: readonly Uint8Array[], trailers: Readonly<Record<string, string>>): Uint8Array {
  const parts: Buffer[] = [];
  for (const chunk of chunks) {
    if (chunk.length === 0) continue;
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, "latin1"), Buffer.from(chunk), Buffer.from("\r\n", "latin1"));
  }
  parts.push(Buffer.from("0\r\n", "latin1"));
  for (const [name, value] of Object.entries(trailers)) parts.push(Buffer.from(`${name}:${value}\r\n`, "latin1"));
  parts.push(Buffer.from("\r\n", "latin1"));
  return Buffer.concat(parts);
}
