import { CairnError } from "../base/index.js";
import type { ActionCtx } from "./registration.js";

/**
 * HTTP actions: an app's own HTTP endpoints (webhooks, feeds, file-like answers), each a
 * handler from a web-standard `Request` to a `Response` with an action's context (run
 * queries, mutations and actions, internal ones included; the caller's identity from a
 * Bearer token). The app exports `http`, a router made with `httpRouter()`:
 *
 *   export const http = httpRouter();
 *   http.route({ path: "/stripe", method: "POST", handler: httpAction(async (ctx, request) => …) });
 *   http.route({ pathPrefix: "/files/", method: "GET", handler: … });
 *
 * Paths are under the node's HTTP actions path (`/http` by default): the route above
 * answers `POST /http/stripe`, a path "/" the base path itself. An exact path wins over a
 * prefix, a longer prefix over a shorter one — for the path, whatever the method: the
 * path that wins answers 405 for a method it has no route for. A route for a path is one
 * per method; a second is refused when declared (SCHEMA_INVALID), as is a malformed path
 * or method.
 */
export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export type HttpActionHandler = (ctx: ActionCtx, request: Request) => Response | Promise<Response>;

const HTTP_ACTION_BRAND = Symbol.for("cairn.httpAction");
const HTTP_ROUTER_BRAND = Symbol.for("cairn.httpRouter");

export interface HttpAction {
  readonly handler: HttpActionHandler;
}

/** Wraps an HTTP action's handler (what `route` takes). */
export function httpAction(handler: HttpActionHandler): HttpAction {
  if (typeof handler !== "function") throw new CairnError("SCHEMA_INVALID", "httpAction(...) takes a handler: async (ctx, request) => new Response(...)");
  return Object.freeze({ handler, [HTTP_ACTION_BRAND]: true });
}

export type HttpRouteSpec = ({ readonly path: string; readonly pathPrefix?: never } | { readonly pathPrefix: string; readonly path?: never }) & {
  readonly method: HttpMethod;
  readonly handler: HttpAction;
};

/** What a request's method and path find: its route, or the methods the path takes (405), or nothing (404). */
export type HttpRouteMatch =
  | { readonly kind: "route"; readonly handler: HttpActionHandler; readonly route: string }
  | { readonly kind: "method"; readonly allowed: readonly HttpMethod[] }
  | { readonly kind: "none" };

/** Absolute, no empty segment, no `.`/`..` segment, no query or fragment. */
const ROUTE_PATH = /^(\/[A-Za-z0-9\-._~!$&'()*+,;=:@%]+)+$/;

export class HttpRouter {
  private readonly exact = new Map<string, Map<HttpMethod, HttpActionHandler>>();
  /** Longest first, so the first that matches is the longest. */
  private prefixes: { readonly prefix: string; readonly methods: Map<HttpMethod, HttpActionHandler> }[] = [];

  constructor() {
    Object.defineProperty(this, HTTP_ROUTER_BRAND, { value: true });
  }

  route(spec: HttpRouteSpec): void {
    if (typeof spec !== "object" || spec === null) throw invalid("route(...) takes { path | pathPrefix, method, handler }");
    const { method, handler } = spec;
    if (!(HTTP_METHODS as readonly unknown[]).includes(method)) throw invalid(`method must be one of ${HTTP_METHODS.join(", ")}, not ${JSON.stringify(method)}`);
    if (typeof handler !== "object" || handler === null || (handler as unknown as Record<symbol, unknown>)[HTTP_ACTION_BRAND] !== true) {
      throw invalid("handler must be made with httpAction(async (ctx, request) => …)");
    }
    const hasPath = spec.path !== undefined;
    const hasPrefix = spec.pathPrefix !== undefined;
    if (hasPath === hasPrefix) throw invalid("a route takes exactly one of path and pathPrefix");
    if (hasPath) {
      const path = spec.path!;
      checkPath(path, "path");
      const methods = this.exact.get(path) ?? new Map<HttpMethod, HttpActionHandler>();
      if (methods.has(method)) throw invalid(`two routes for ${method} ${path}`);
      methods.set(method, handler.handler);
      this.exact.set(path, methods);
      return;
    }
    const prefix = spec.pathPrefix!;
    if (typeof prefix !== "string" || !prefix.endsWith("/")) throw invalid(`pathPrefix must be a path ending with "/", not ${JSON.stringify(prefix)}`);
    if (prefix !== "/") checkPath(prefix.slice(0, -1), "pathPrefix");
    let entry = this.prefixes.find((candidate) => candidate.prefix === prefix);
    if (entry === undefined) {
      entry = { prefix, methods: new Map() };
      this.prefixes = [...this.prefixes, entry].sort((a, b) => b.prefix.length - a.prefix.length);
    }
    if (entry.methods.has(method)) throw invalid(`two routes for ${method} ${prefix}*`);
    entry.methods.set(method, handler.handler);
  }

  /** The route for `method` at `path` (relative to the HTTP actions path, starting with "/"). HEAD finds GET's. */
  lookup(method: string, path: string): HttpRouteMatch {
    const wanted = (method === "HEAD" ? "GET" : method) as HttpMethod;
    const exact = this.exact.get(path);
    if (exact !== undefined) return matchIn(exact, wanted, path);
    for (const { prefix, methods } of this.prefixes) {
      if (path.startsWith(prefix)) return matchIn(methods, wanted, `${prefix}*`);
    }
    return { kind: "none" };
  }

  /** Every route as "METHOD path" (prefixes as "path*"), for listings. */
  routes(): string[] {
    const lines: string[] = [];
    for (const [path, methods] of this.exact) for (const method of methods.keys()) lines.push(`${method} ${path}`);
    for (const { prefix, methods } of this.prefixes) for (const method of methods.keys()) lines.push(`${method} ${prefix}*`);
    return lines.sort();
  }
}

/** A new router for an app's `http` export. */
export function httpRouter(): HttpRouter {
  return new HttpRouter();
}

export function isHttpRouter(value: unknown): value is HttpRouter {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[HTTP_ROUTER_BRAND] === true;
}

function matchIn(methods: ReadonlyMap<HttpMethod, HttpActionHandler>, method: HttpMethod, route: string): HttpRouteMatch {
  const handler = methods.get(method);
  return handler === undefined ? { kind: "method", allowed: [...methods.keys()] } : { kind: "route", handler, route: `${method} ${route}` };
}

function checkPath(path: unknown, field: "path" | "pathPrefix"): void {
  // The root is a path (the base path's own route); a prefix "/" is checked before this.
  if (path === "/" && field === "path") return;
  if (typeof path !== "string" || !ROUTE_PATH.test(path) || path.split("/").some((segment) => segment === "." || segment === "..")) {
    throw invalid(`${field} must be an absolute path like "/webhooks/stripe" (no empty, "." or ".." segment, no query), not ${JSON.stringify(path)}`);
  }
}

function invalid(problem: string): CairnError {
  return new CairnError("SCHEMA_INVALID", `http router: ${problem}`);
}
