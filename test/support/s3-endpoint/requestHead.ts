import type { IncomingMessage } from "node:http";
import type { HeaderList } from "./sigv4.js";

/**
 * A request's method, raw path, raw query and headers, detached from the socket so that
 * authentication, routing and the operations take plain values.
 */
export interface RequestHead {
  readonly method: string;
  /** Path exactly as received, still percent-encoded. */
  readonly rawPath: string;
  /** Query string as received, without `?` (empty when absent). */
  readonly rawQuery: string;
  /** Every header as received, in order, names in their original case. */
  readonly headerList: HeaderList;
  /** The value of a header (lowercase name); repeated headers joined by ", " as Node does. */
  header(name: string): string | undefined;
}

export function requestHeadOf(request: IncomingMessage): RequestHead {
  const url = request.url ?? "/";
  const questionMark = url.indexOf("?");
  const headerList: [string, string][] = [];
  for (let index = 0; index + 1 < request.rawHeaders.length; index += 2) {
    headerList.push([request.rawHeaders[index] ?? "", request.rawHeaders[index + 1] ?? ""]);
  }
  return {
    method: request.method ?? "GET",
    rawPath: questionMark < 0 ? url : url.slice(0, questionMark),
    rawQuery: questionMark < 0 ? "" : url.slice(questionMark + 1),
    headerList,
    header: (name) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(", ") : value;
    },
  };
}
