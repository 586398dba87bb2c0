import type { IncomingMessage } from "node:http";
import { CairnError, hasErrorCode, MESSAGE_BYTES_MAX } from "../base/index.js";

/** The request's body as text; MESSAGE_TOO_LARGE past MESSAGE_BYTES_MAX (read no further). */
export async function readBody(request: IncomingMessage, bytesMax = MESSAGE_BYTES_MAX): Promise<string> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > bytesMax) throw tooLarge(bytesMax);
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of request as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (bytes > bytesMax) throw tooLarge(bytesMax);
      chunks.push(chunk);
    }
  } catch (error) {
    if (hasErrorCode(error, "MESSAGE_TOO_LARGE")) throw error;
    // The client went away mid-body (ECONNRESET "aborted"): its fault, not a server bug.
    throw new CairnError("PROTOCOL_INVALID", "the request body ended before it was complete", { cause: error });
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge(bytesMax: number): CairnError {
  return new CairnError("MESSAGE_TOO_LARGE", `the request body is over ${bytesMax} bytes`);
}
