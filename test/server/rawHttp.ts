import { request } from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";

export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body as sent (still compressed when content-encoding says so). */
  readonly body: Buffer;
}

/**
 * One HTTP request with exactly the target and headers given (fetch would normalize the
 * path, add Accept-Encoding and decompress): what a crafted client sends.
 */
export function rawRequest(url: string, target: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: hostname, port: Number(port), method: options.method ?? "GET", path: target, headers: options.headers ?? {}, agent: false }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () => resolve({ status: incoming.statusCode!, headers: incoming.headers, body: Buffer.concat(chunks) }));
      incoming.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(options.body);
  });
}

/** The body decoded by its content-encoding. */
export function decoded(answer: RawAnswer): Buffer {
  switch (answer.headers["content-encoding"]) {
    case undefined:
      return answer.body;
    case "gzip":
      return gunzipSync(answer.body);
    case "br":
      return brotliDecompressSync(answer.body);
    default:
      throw new Error(`unexpected content-encoding ${answer.headers["content-encoding"]}`);
  }
}

/** The response headers that are CORS's. */
export function corsHeaders(answer: RawAnswer): string[] {
  return Object.keys(answer.headers).filter((name) => name.startsWith("access-control-"));
}
