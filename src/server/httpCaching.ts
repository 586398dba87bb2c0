import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, extname } from "node:path";

/** A year: browsers keep a fingerprinted file until its name changes, which is when its content does. */
export const CACHE_IMMUTABLE = "public, max-age=31536000, immutable";
/** Kept, but revalidated (a 304 when the ETag still matches) before every use. */
export const CACHE_REVALIDATE = "no-cache";

/**
 * Whether a file name carries a content hash, as bundlers name their output
 * (`index-3f2a9c1b.js` from vite, `main.3f2a9c1b.js` from webpack): the last `-` or `.`
 * separated part before the extension is 8 or more letters, digits or `_`, with at least
 * one digit and one letter. Conservative on purpose: a name taken for fingerprinted and
 * cached for a year would serve stale content after a deploy, while a hash missed only
 * costs a revalidation.
 */
export function isFingerprinted(fileName: string): boolean {
  const name = basename(fileName);
  const stem = name.slice(0, name.length - extname(name).length);
  const match = /[-.]([A-Za-z0-9_]{8,})$/.exec(stem);
  return match !== null && /\d/.test(match[1]!) && /[A-Za-z]/.test(match[1]!);
}

/** `Cache-Control` for a static file: immutable when fingerprinted, revalidated otherwise (index.html among them). */
export function cacheControlFor(fileName: string): string {
  return isFingerprinted(fileName) && basename(fileName) !== "index.html" ? CACHE_IMMUTABLE : CACHE_REVALIDATE;
}

/**
 * Whether the request's `If-None-Match` names `etag` (or is `*`): the client's copy is
 * current and gets a 304. Weak comparison, as RFC 9110 §13.1.2 asks for If-None-Match.
 */
export function notModified(request: IncomingMessage, etag: string): boolean {
  const header = request.headers["if-none-match"];
  if (header === undefined) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

/** Adds `field` to the response's `Vary` (several parts each add theirs: CORS adds Origin, compression Accept-Encoding). */
export function appendVary(response: ServerResponse, field: string): void {
  const current = response.getHeader("vary");
  const fields = typeof current === "string" ? current.split(",").map((part) => part.trim()).filter((part) => part !== "") : [];
  if (!fields.some((part) => part.toLowerCase() === field.toLowerCase())) fields.push(field);
  response.setHeader("vary", fields.join(", "));
}
