import type { IncomingMessage, ServerResponse } from "node:http";
import { CairnError, CORS_PREFLIGHT_MAX_AGE_S } from "../base/index.js";
import { sendError } from "./HttpApi.js";
import { appendVary } from "./httpCaching.js";

/** Any origin on this machine: http(s)://localhost, 127.0.0.1 or [::1], on any port (`cairn dev`'s default). */
export interface LocalhostOrigins {
  readonly kind: "localhost";
}

/**
 * An origin whose pages may call the API and load the client script: one origin exactly
 * (`https://app.example.com`, `capacitor://localhost`), `*` for any, or LOCALHOST_ORIGINS.
 */
export type CorsOrigin = string | LocalhostOrigins;

export const LOCALHOST_ORIGINS: LocalhostOrigins = Object.freeze({ kind: "localhost" });

const LOCALHOST_NAMES: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether `origin` is a page served from this machine (http or https, any port). */
export function isLocalhostOrigin(origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  return (url.protocol === "http:" || url.protocol === "https:") && LOCALHOST_NAMES.has(url.hostname);
}

/**
 * `--cors-origin` values (each may be a comma list) as origins; INVALID_ARGUMENT for one
 * that is not `*` nor `scheme://host[:port]`.
 */
export function parseCorsOrigins(values: readonly string[]): CorsOrigin[] {
  return values.flatMap((value) => value.split(",")).map((part) => part.trim()).filter((part) => part !== "").map((part) => (part === "*" ? part : originOf(part, "--cors-origin")));
}

/**
 * `text` as an origin the way browsers send it in `Origin` (scheme and host lowercased, a
 * default port dropped); INVALID_ARGUMENT if it has a path, query, user or is no URL.
 */
function originOf(text: string, what: string): string {
  const form = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@\s]+)\/?$/i.exec(text);
  if (form === null) throw new CairnError("INVALID_ARGUMENT", `${what} must be an origin (scheme://host[:port], no path), or *, not ${JSON.stringify(text)}`);
  const scheme = form[1]!.toLowerCase();
  // http(s) through the URL parser: it drops a default port and normalizes the host as browsers do.
  if ((scheme === "http" || scheme === "https") && URL.canParse(text)) return new URL(text).origin;
  return `${scheme}://${form[2]!.toLowerCase()}`;
}

/** The origin a request was sent to: its scheme and Host, as a reverse proxy in front of the node forwards them. */
function ownOriginOf(request: IncomingMessage): string | null {
  const forwardedProto = firstValue(request.headers["x-forwarded-proto"])?.toLowerCase();
  const scheme = forwardedProto === "http" || forwardedProto === "https" ? forwardedProto : "encrypted" in request.socket && request.socket.encrypted ? "https" : "http";
  const host = firstValue(request.headers["x-forwarded-host"]) ?? request.headers.host;
  if (host === undefined || host === "") return null;
  try {
    return originOf(`${scheme}://${host}`, "Host");
  } catch {
    return null;
  }
}

function firstValue(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value?.split(",")[0]?.trim();
}

/** The methods and request headers the API takes from a page of another origin. */
const ALLOWED_METHODS = "GET, HEAD, POST";
const ALLOWED_HEADERS = "Authorization, Content-Type";

/**
 * Which browser pages may use the API (`/api/*`), the client script (`/cairn-client.js`)
 * and the sync WebSocket: their own origin always, and the origins given.
 *
 * Browsers send a cross-origin "simple" request (a form POST, a fetch with a text/plain
 * body) without asking first, and apply no CORS at all to WebSockets; CORS headers only
 * decide whether the page may read the answer. So a refused origin is refused before
 * anything runs: its preflight gets 403, and so does the request itself and its WebSocket
 * upgrade, with no CORS headers and no data — a cross-origin form cannot run a mutation
 * with the visitor's cookies or network position.
 *
 * - No `Origin` header (Node clients, curl, other nodes, a same-origin GET): not a
 *   cross-origin browser request; let through unchanged.
 * - `Origin` equal to the request's own `scheme://Host` (X-Forwarded-Proto and
 *   X-Forwarded-Host honoured: a page cannot set them without a preflight, which is
 *   refused): same-origin; let through, no CORS headers.
 * - An allowed origin: `Access-Control-Allow-Origin: <origin>` and `Vary: Origin`; its
 *   preflight is answered 204 with the methods and headers above, cached
 *   CORS_PREFLIGHT_MAX_AGE_S. No credentials: the API authenticates by the Authorization
 *   header, never by cookies.
 */
export class CorsPolicy {
  private readonly exact: ReadonlySet<string>;
  private readonly any: boolean;
  private readonly localhost: boolean;

  /** INVALID_ARGUMENT for an origin that is not `*`, LOCALHOST_ORIGINS nor `scheme://host[:port]`. */
  constructor(origins: readonly CorsOrigin[]) {
    const exact = new Set<string>();
    let any = false;
    let localhost = false;
    for (const origin of origins) {
      if (typeof origin !== "string") localhost = true;
      else if (origin === "*") any = true;
      else exact.add(originOf(origin, "a CORS origin"));
    }
    this.exact = exact;
    this.any = any;
    this.localhost = localhost;
  }

  /** The paths whose answers pages of other origins may read: the API and the client script. */
  static governs(path: string): boolean {
    return path.startsWith("/api/") || path === "/cairn-client.js";
  }

  /** Whether a page of `origin` may call the API. */
  allows(origin: string): boolean {
    return this.any || this.exact.has(origin) || (this.localhost && isLocalhostOrigin(origin));
  }

  /**
   * Checks a request to a governed path: true to go on (headers set for an allowed
   * origin); false when it has been answered (a preflight, or a refusal).
   */
  admit(request: IncomingMessage, response: ServerResponse): boolean {
    const origin = request.headers.origin;
    appendVary(response, "Origin");
    const preflight = request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined;
    if (origin === undefined) return true;
    if (origin === ownOriginOf(request)) {
      if (!preflight) return true;
      response.writeHead(204);
      response.end();
      return false;
    }
    if (!this.allows(origin)) {
      sendError(response, new CairnError("FORBIDDEN", `pages of origin ${origin} may not call this server (see --cors-origin)`));
      return false;
    }
    response.setHeader("access-control-allow-origin", origin);
    if (!preflight) return true;
    response.writeHead(204, {
      "access-control-allow-methods": ALLOWED_METHODS,
      "access-control-allow-headers": ALLOWED_HEADERS,
      "access-control-max-age": String(CORS_PREFLIGHT_MAX_AGE_S),
    });
    response.end();
    return false;
  }

  /** Whether a WebSocket upgrade may proceed: no Origin, same-origin, or an allowed one. */
  admitsSocket(request: IncomingMessage): boolean {
    const origin = request.headers.origin;
    return origin === undefined || origin === ownOriginOf(request) || this.allows(origin);
  }
}
