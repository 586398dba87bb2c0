import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CairnError, type Clock } from "../base/index.js";
import { actionScheduler, actionStorage, type ActionCtx, type FileService, type HttpRouter, type UserIdentity } from "../functions/index.js";
import type { Value } from "../model/index.js";
import type { SyncBackend, TokenVerifier } from "../sync/index.js";
import { sendError, sendJson } from "./HttpApi.js";

/**
 * Serves the app's HTTP actions (functions/httpRouter.ts) under `basePath`: a request's
 * method and the rest of its path find a route; the handler gets a web-standard Request
 * (its body streamed, never read here) and an action's context, and its Response is
 * streamed back. Any node serves them: the context's calls go through the node's
 * backend, which forwards writes to the shard's writer as for any client.
 *
 * - No route for the path: 404; a route for another method: 405 with `Allow`. HEAD runs
 *   the GET route and sends its headers only.
 * - `Authorization: Bearer <token>` is verified (401 if it does not verify) and is the
 *   context's identity; without it the caller is anonymous. The handler still sees the
 *   header, for schemes of its own (a webhook's signature).
 * - Reads follow the action's own writes: on a follower, a mutation is forwarded to the
 *   writer and answered only once this node applied it (nodeBackend), so a query after it
 *   sees it.
 * - A handler that throws, or returns something that is not a Response, is answered 500
 *   without its error's text (which may hold secrets); the stack goes to the node's log.
 */
export interface HttpActionsOptions {
  /** Where the routes are served: with "/http", a route "/stripe" answers "/http/stripe". */
  readonly basePath: string;
  /** The current app's router (an app reloaded by `cairn dev` serves its new routes). */
  readonly router: () => HttpRouter | null;
  readonly backend: SyncBackend;
  readonly verifier: TokenVerifier | null;
  readonly log: (line: string) => void;
  /** ctx.scheduler's `now` (runAfter counts from it). */
  readonly clock: Clock;
  /** ctx.storage's URLs and bytes (the node's FileStore). */
  readonly files: () => FileService | null;
}

/** Where HTTP actions are served unless a node is told otherwise. */
export const HTTP_ACTIONS_PATH_DEFAULT = "/http";

export class HttpActions {
  constructor(private readonly options: HttpActionsOptions) {
    checkHttpActionsPath(options.basePath);
  }

  /** Answers the request if its path is under the base path; false otherwise. */
  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<boolean> {
    const { basePath } = this.options;
    if (path !== basePath && !path.startsWith(`${basePath}/`)) return false;
    const routePath = path.slice(basePath.length) || "/";
    const method = request.method ?? "GET";
    const match = this.options.router()?.lookup(method, routePath) ?? { kind: "none" as const };
    if (match.kind === "none") {
      sendError(response, new CairnError("FUNCTION_NOT_FOUND", `no HTTP action at ${routePath}`));
      return true;
    }
    if (match.kind === "method") {
      const allowed = match.allowed.includes("GET") ? [...match.allowed, "HEAD"] : match.allowed;
      response.setHeader("allow", allowed.join(", "));
      sendJson(response, 405, { error: { code: "INVALID_ARGUMENT", kind: "InvalidInput", message: `${method} is not routed at ${routePath}; use ${allowed.join(", ")}` } });
      return true;
    }
    let identity: UserIdentity | null;
    try {
      identity = await this.identityOf(request);
    } catch (error) {
      sendError(response, error, this.options.log);
      return true;
    }
    let answer: unknown;
    try {
      answer = await match.handler(this.contextFor(identity), webRequestOf(request, method));
      if (!(answer instanceof Response)) throw new TypeError(`it returned ${describe(answer)}, not a Response`);
    } catch (error) {
      this.options.log(`HTTP action ${match.route} failed: ${(error as Error)?.stack ?? String(error)}`);
      sendFailure(response);
      return true;
    }
    await this.send(response, answer, method === "HEAD", match.route);
    return true;
  }

  private contextFor(identity: UserIdentity | null): ActionCtx {
    const { backend } = this.options;
    // As any action's: the app's internal functions too.
    const caller = { identity, internal: true };
    const runQuery = async (path: string, args: Record<string, unknown> | undefined): Promise<Value> => {
      const run = await backend.runQuery(path, (args ?? {}) as Value, { ...caller, readTs: backend.readTs });
      if (run.outcome.kind === "failed") throw run.outcome.error;
      return run.outcome.value;
    };
    return {
      auth: { getUserIdentity: async () => identity },
      runQuery,
      storage: actionStorage(this.options.files(), runQuery, async (path, args) => (await backend.runMutation(path, args as Value, caller)).value),
      runMutation: async (path, args) => (await backend.runMutation(path, (args ?? {}) as Value, caller)).value,
      scheduler: actionScheduler(() => this.options.clock.nowMs(), async (path, args) => (await backend.runMutation(path, args as Value, caller)).value),
      runAction: async (path, args) => (await backend.runAction(path, (args ?? {}) as Value, caller)).value,
    };
  }

  private async identityOf(request: IncomingMessage): Promise<UserIdentity | null> {
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? "");
    if (bearer === null) return null;
    if (this.options.verifier === null) throw new CairnError("UNAUTHENTICATED", "this server has no token verifier configured");
    return (await this.options.verifier.verify(bearer[1]!)).identity;
  }

  /** The handler's Response, its body streamed; a body that fails midway ends the connection (the status is gone). */
  private async send(response: ServerResponse, answer: Response, headOnly: boolean, route: string): Promise<void> {
    const headers: Record<string, string | string[]> = {};
    answer.headers.forEach((value, name) => {
      if (name !== "set-cookie") headers[name] = value;
    });
    const cookies = answer.headers.getSetCookie();
    if (cookies.length > 0) headers["set-cookie"] = cookies;
    response.writeHead(answer.status, answer.statusText || undefined, headers);
    if (headOnly || answer.body === null) {
      response.end();
      await answer.body?.cancel();
      return;
    }
    try {
      await pipeline(Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream<Uint8Array>), response);
    } catch (error) {
      if (!response.destroyed || (error as NodeJS.ErrnoException)?.code !== "ERR_STREAM_PREMATURE_CLOSE") {
        this.options.log(`HTTP action ${route}: its response body failed: ${(error as Error)?.stack ?? String(error)}`);
      }
      response.destroy();
    }
  }
}

/** The request as the handler sees it: its URL as the client addressed it, headers, and the body as a stream. */
function webRequestOf(request: IncomingMessage, method: string): Request {
  const headers = new Headers();
  for (let at = 0; at + 1 < request.rawHeaders.length; at += 2) headers.append(request.rawHeaders[at]!, request.rawHeaders[at + 1]!);
  const host = request.headers.host ?? "localhost";
  const url = new URL(request.url ?? "/", `http://${host}`);
  const withBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers,
    ...(withBody ? { body: Readable.toWeb(request) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
  } as RequestInit);
}

function sendFailure(response: ServerResponse): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, 500, { error: { code: "INTERNAL", kind: "Internal", message: "the HTTP action failed; its error is in the server's log" } });
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return `an object (${(value as object).constructor?.name ?? "Object"})`;
  return typeof value;
}

/**
 * INVALID_ARGUMENT unless `basePath` can hold HTTP actions: an absolute path without a
 * trailing "/" that shadows none of Cairn's own (/api, /metrics, /_dashboard, /cairn-*).
 */
export function checkHttpActionsPath(basePath: string): void {
  const first = basePath.split("/")[1] ?? "";
  if (!/^(\/[A-Za-z0-9\-._~]+)+$/.test(basePath) || ["api", "metrics"].includes(first) || first.startsWith("_") || first.startsWith("cairn")) {
    throw new CairnError(
      "INVALID_ARGUMENT",
      `the HTTP actions path must be like "/http" (absolute, no trailing "/", not under /api, /metrics, /_… or /cairn…, which are Cairn's), not ${JSON.stringify(basePath)}`,
    );
  }
}
