import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { CairnError, CONNECT_FRONTIER_WAIT_MS, systemClock, type Clock } from "../base/index.js";
import type { UserIdentity } from "../functions/index.js";
import { announcementSchema, asBaseUrl, PEER_ROUTES, forwardedCallSchema, functionCallFields, wakeHintsSchema, type Announcement } from "../fleet/index.js";
import type { WakeHint } from "../replica/index.js";
import { decodeValue, encodeValue } from "../model/index.js";
import { errorPayload, isInternalError, sameSecret, type ErrorPayload, type SyncBackend, type TokenVerifier } from "../sync/index.js";
import type { AdminApi } from "./AdminApi.js";
import { httpStatusOf } from "./httpStatus.js";
import { readBody } from "./readBody.js";

export interface HttpApiOptions {
  readonly backend: SyncBackend;
  readonly verifier: TokenVerifier | null;
  /** The deployment's admin key (null: admin operations are disabled). */
  readonly adminKey: string | null;
  readonly health: () => unknown;
  readonly adminStatus: () => unknown;
  readonly metrics: { text(): Promise<string>; readonly contentType: string } | null;
  /**
   * Where calls forwarded by replicas run: this node's own runtime, which never forwards
   * again (a node that is not the writer answers NOT_WRITER and the replica re-routes).
   */
  readonly forwardedTo?: SyncBackend;
  /** Wake hints from the writer (`POST /api/internal/hint`); absent: hints are refused. */
  readonly hinted?: (hints: readonly WakeHint[]) => void;
  /** A replica or standby announced itself (`POST /api/internal/peer`) instead of waiting to be found in the registry. */
  readonly peerJoined?: (peer: Announcement) => void;
  /** Resolves true once the node's frontier reaches `ts` (a query's `minTs`). */
  readonly waitForTs?: (ts: number, timeoutMs: number) => Promise<boolean>;
  /** How long a query's `minTs` waits (default CONNECT_FRONTIER_WAIT_MS, as a session's Connect). */
  readonly frontierWaitMs?: number;
  /** Where an Internal failure's stack goes (the client gets only its code). */
  readonly log?: (line: string) => void;
  /** The admin API's reads (`/api/admin/*` beyond status and calls; docs/admin-api.md). */
  readonly admin?: AdminApi;
  /** Times admin calls (default the system clock). */
  readonly clock?: Clock;
}

/** A public call; a query may name the lowest ts the caller accepts (the newest it has seen): a replica behind it waits. */
const callSchema = z.strictObject({ ...functionCallFields, minTs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional() });
/**
 * An admin's call may run as a given user instead (the dashboard's "run as"), and a query
 * may read the past: at `ts`, within the node's local history window (LOCAL_HISTORY_UNAVAILABLE
 * below it; a ts the node has not reached yet waits for it like `minTs`).
 */
const adminCallSchema = callSchema.extend({
  identity: z.looseObject({ subject: z.string().min(1), issuer: z.string().optional() }).optional(),
  ts: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

type Call = z.infer<typeof callSchema> & { readonly ts?: number };

/** What a call cost, for the admin's runner: its time and its read or write set as key ranges. */
interface CallStats {
  readonly durationMs: number;
  readonly readRanges?: number;
  readonly writeRanges?: number;
}
type Kind = "query" | "mutation" | "action";

/**
 * The HTTP API beside the WebSocket: one-shot function calls, health, metrics and the
 * admin operations. Bodies and answers are JSON; values in Cairn's JSON encoding.
 *
 * - `POST /api/{query,mutation,action}` `{path, args, clientId?, seq?, ackedThrough?}` → `{value, ts?}`;
 *   `Authorization: Bearer <token>` sets the caller's identity.
 * - `POST /api/admin/{query,mutation,action}`: the same, internal functions included,
 *   with `Authorization: Admin <key>`; `GET /api/admin/status`: sessions and queues.
 * - `POST /api/internal/forward/{mutation,action}` (admin): a call a replica forwards, with
 *   the caller's identity; runs here only. `POST /api/internal/hint` (admin): wake hints.
 * - A query may carry `minTs`: a node whose frontier is older waits (bounded), then
 *   answers REPLICA_BEHIND, so a caller never reads older than what it has seen.
 * - `GET /api/health`: role, shards, frontier, staleness. `GET /metrics`: Prometheus text.
 * - Errors: `{error: {code, kind, message}}` with the status of `httpStatusOf`.
 */
export class HttpApi {
  constructor(private readonly options: HttpApiOptions) {}

  /** Answers the request if it is one of the API's; false if the path is not the API's. */
  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<boolean> {
    if (path !== "/metrics" && !path.startsWith("/api/")) return false;
    try {
      await this.route(request, response, path);
    } catch (error) {
      sendError(response, error, this.options.log);
    }
    return true;
  }

  private async route(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    if (path === "/metrics") {
      if (this.options.metrics === null) throw new CairnError("FUNCTION_NOT_FOUND", "metrics are disabled");
      if (!expectMethod(request, response, "GET")) return;
      response.writeHead(200, { "content-type": this.options.metrics.contentType });
      response.end(await this.options.metrics.text());
      return;
    }
    if (path === "/api/health") {
      // "stopped" answers 503, so that a load balancer checking only the status takes the node out.
      if (expectMethod(request, response, "GET")) {
        const health = this.options.health();
        sendJson(response, (health as { status?: unknown } | null)?.status === "stopped" ? 503 : 200, health);
      }
      return;
    }
    if (path.startsWith("/api/internal/")) return this.internal(request, response, path);
    const publicCall = /^\/api\/(query|mutation|action)$/.exec(path);
    const adminCall = /^\/api\/admin\/(query|mutation|action)$/.exec(path);
    // The one-time login code is the credential there (cairn dev's dashboard link).
    if (path === "/api/admin/login" && this.options.admin !== undefined) return this.options.admin.login(request, response);
    if (path.startsWith("/api/admin/")) this.checkAdmin(request);
    if (path === "/api/admin/status") {
      if (expectMethod(request, response, "GET")) sendJson(response, 200, this.options.adminStatus());
      return;
    }
    if (adminCall === null && this.options.admin !== undefined && (await this.options.admin.handle(request, response, path))) return;
    const kind = (publicCall ?? adminCall)?.[1] as Kind | undefined;
    if (kind === undefined) throw new CairnError("FUNCTION_NOT_FOUND", `no API at ${path}`);
    if (!expectMethod(request, response, "POST")) return;
    if (adminCall === null) {
      const call = parseCall(callSchema, await readBody(request));
      sendJson(response, 200, (await this.run(kind, call, await this.identityOf(request), false)).answer);
      return;
    }
    const { identity, ...call } = parseCall(adminCallSchema, await readBody(request));
    const clock = this.options.clock ?? systemClock;
    const startedMs = clock.monotonicMs();
    const { answer, stats } = await this.run(kind, call, (identity as UserIdentity | undefined) ?? null, true);
    sendJson(response, 200, { ...answer, stats: { durationMs: Math.round((clock.monotonicMs() - startedMs) * 1000) / 1000, ...stats } });
  }

  /** Node-to-node calls, all with the admin key: forwarded writes and wake hints. */
  private async internal(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    this.checkAdmin(request);
    if (!expectMethod(request, response, "POST")) return;
    if (path === `/${PEER_ROUTES.hint}`) {
      this.takeHints(parseJson(await readBody(request)));
      sendJson(response, 200, { ok: true });
      return;
    }
    if (path === `/${PEER_ROUTES.announce}`) {
      const parsed = announcementSchema.safeParse(parseJson(await readBody(request)));
      if (!parsed.success) throw new CairnError("PROTOCOL_INVALID", `invalid peer: ${z.prettifyError(parsed.error)}`);
      this.options.peerJoined?.({ nodeId: parsed.data.nodeId, url: asBaseUrl(parsed.data.url) });
      sendJson(response, 200, { ok: true });
      return;
    }
    const forwarded = (["mutation", "action"] as const).find((kind) => path === `/${PEER_ROUTES.forward(kind)}`);
    if (forwarded === undefined || this.options.forwardedTo === undefined) throw new CairnError("FUNCTION_NOT_FOUND", `no API at ${path}`);
    sendJson(response, 200, await this.runForwarded(forwarded, parseJson(await readBody(request))));
  }

  /** Wake hints a writer sent (over HTTP or on its peer socket); FUNCTION_NOT_FOUND on a node that takes none, PROTOCOL_INVALID if malformed. */
  takeHints(message: unknown): void {
    if (this.options.hinted === undefined) throw new CairnError("FUNCTION_NOT_FOUND", "this node takes no wake hints (it is not a replica)");
    const parsed = wakeHintsSchema.safeParse(message);
    if (!parsed.success) throw new CairnError("PROTOCOL_INVALID", `invalid hints: ${z.prettifyError(parsed.error)}`);
    this.options.hinted(parsed.data.hints);
  }

  /** Whether `request` carries the deployment's admin key (a peer socket's upgrade). */
  isAdmin(request: IncomingMessage): boolean {
    try {
      this.checkAdmin(request);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A forwarded call's answer as the HTTP route gives it — status and JSON body — for a
   * call that came on a peer socket: every failure is an answer here, never a throw.
   */
  async answerForwarded(kind: "mutation" | "action", message: unknown): Promise<{ readonly status: number; readonly body: unknown }> {
    try {
      if (this.options.forwardedTo === undefined) throw new CairnError("FUNCTION_NOT_FOUND", "this node runs no forwarded calls");
      return { status: 200, body: await this.runForwarded(kind, message) };
    } catch (error) {
      if (isInternalError(error)) this.options.log?.(`forwarded ${kind} failed: ${(error as Error)?.stack ?? String(error)}`);
      return errorAnswer(error);
    }
  }

  private async runForwarded(kind: "mutation" | "action", message: unknown): Promise<unknown> {
    const parsed = forwardedCallSchema.safeParse(message);
    if (!parsed.success) throw new CairnError("PROTOCOL_INVALID", `invalid forwarded call: ${z.prettifyError(parsed.error)}`);
    const { identity, internal, ...call } = parsed.data;
    // A client's call, or an admin's (internal): the forwarding node marked which, and only peers with the admin key reach here.
    return (await this.run(kind, call, identity as UserIdentity | null, internal === true, this.options.forwardedTo)).answer;
  }

  private async run(kind: Kind, call: Call, identity: UserIdentity | null, internal: boolean, backend = this.options.backend): Promise<{ answer: object; stats: Omit<CallStats, "durationMs"> }> {
    const args = decodeValue(call.args ?? {});
    switch (kind) {
      case "query": {
        const minTs = Math.max(call.minTs ?? 0, call.ts ?? 0);
        if (minTs > backend.readTs) await this.waitForFrontier(minTs, backend);
        const run = await backend.runQuery(call.path, args, { identity, internal, readTs: call.ts ?? backend.readTs });
        if (run.outcome.kind === "failed") throw run.outcome.error;
        return { answer: { value: encodeValue(run.outcome.value), ts: run.readTs }, stats: { readRanges: run.readRanges.length } };
      }
      case "mutation": {
        if (call.ts !== undefined) throw new CairnError("INVALID_ARGUMENT", "only a query reads at a past ts: a mutation always reads the present");
        const receipt = {
          ...(call.clientId !== undefined ? { clientId: call.clientId } : {}),
          ...(call.seq !== undefined ? { seq: call.seq } : {}),
          ...(call.ackedThrough !== undefined ? { ackedThrough: call.ackedThrough } : {}),
        };
        const run = await backend.runMutation(call.path, args, { identity, internal, ...receipt });
        return { answer: { value: encodeValue(run.value), ts: run.ts, ...(run.replayed ? { replayed: true } : {}) }, stats: { writeRanges: run.writeRanges.length } };
      }
      case "action":
        if (call.ts !== undefined) throw new CairnError("INVALID_ARGUMENT", "only a query reads at a past ts: an action's queries read the present");
        return { answer: { value: encodeValue((await backend.runAction(call.path, args, { identity, internal })).value) }, stats: {} };
    }
  }

  private async waitForFrontier(minTs: number, backend: SyncBackend): Promise<void> {
    const reached = this.options.waitForTs === undefined ? false : await this.options.waitForTs(minTs, this.options.frontierWaitMs ?? CONNECT_FRONTIER_WAIT_MS);
    if (!reached) {
      throw new CairnError("REPLICA_BEHIND", `this node has applied the log through ts ${backend.readTs}, older than minTs ${minTs}; retry, or ask another node`, {
        details: { frontierTs: backend.readTs, minTs },
      });
    }
  }

  private async identityOf(request: IncomingMessage): Promise<UserIdentity | null> {
    const header = request.headers.authorization;
    if (header === undefined) return null;
    const bearer = /^Bearer (.+)$/.exec(header);
    if (bearer === null) throw new CairnError("UNAUTHENTICATED", "the Authorization header must be `Bearer <token>`");
    if (this.options.verifier === null) throw new CairnError("UNAUTHENTICATED", "this server has no token verifier configured");
    return (await this.options.verifier.verify(bearer[1]!)).identity;
  }

  private checkAdmin(request: IncomingMessage): void {
    const { adminKey } = this.options;
    if (adminKey === null) throw new CairnError("FORBIDDEN", "admin operations are disabled: start the server with CAIRN_ADMIN_KEY set");
    const given = /^Admin (.+)$/.exec(request.headers.authorization ?? "")?.[1];
    if (given === undefined || !sameSecret(given, adminKey)) throw new CairnError("FORBIDDEN", "admin operations need `Authorization: Admin <key>` with the deployment's admin key");
  }
}

/** Whether the request uses `method`; if not, it is answered 405 naming the one to use. */
export function expectMethod(request: IncomingMessage, response: ServerResponse, method: string): boolean {
  if (request.method === method) return true;
  response.setHeader("allow", method);
  sendJson(response, 405, { error: { code: "INVALID_ARGUMENT", kind: "InvalidInput", message: `use ${method}` } });
  return false;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CairnError("PROTOCOL_INVALID", "the request body must be JSON");
  }
}

function parseCall<Schema extends z.ZodType>(schema: Schema, text: string): z.infer<Schema> {
  const parsed = schema.safeParse(parseJson(text));
  if (!parsed.success) throw new CairnError("PROTOCOL_INVALID", `invalid request: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  response.end(text);
}

/** An error as the HTTP API answers it: the status of its code and `{error: payload}`. */
export function errorAnswer(error: unknown): { readonly status: number; readonly body: { readonly error: ErrorPayload } } {
  const payload = errorPayload(error);
  return { status: httpStatusOf(payload), body: { error: payload } };
}

/** Answers with the error's wire form; an Internal failure's stack goes to `log`, never to the client. */
export function sendError(response: ServerResponse, error: unknown, log?: (line: string) => void): void {
  if (isInternalError(error)) log?.(`request failed: ${(error as Error)?.stack ?? String(error)}`);
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const { status, body } = errorAnswer(error);
  sendJson(response, status, body);
}
