import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { CairnError, LOCAL_HISTORY_REVISIONS_MAX } from "../base/index.js";
import type { LogQuery } from "../sync/index.js";
import { readBody } from "./readBody.js";
import { expectMethod, sendJson } from "./HttpApi.js";
import type { LoginCodes } from "./LoginCodes.js";

/** What the admin API reads, from the node's parts (startNode wires them). */
export interface AdminSources {
  /** The tables with their document counts at the node's read ts. */
  tables(): unknown;
  functions(): unknown;
  /** A document's revisions in the local history window, newest first. */
  history(id: string, limit: number): unknown;
  logs(query: LogQuery): unknown;
  deployment(): Promise<unknown>;
  metrics(): unknown;
  /** The admin key, given for a redeemed login code (null: no admin key, so no login). */
  readonly adminKey: string | null;
  /** Login codes `cairn dev` issues (null: logins by code are off). */
  readonly loginCodes: LoginCodes | null;
}

/** Revisions a history request returns when it names no limit (a document's recent past). */
const HISTORY_LIMIT_DEFAULT = 20;
const loginSchema = z.strictObject({ code: z.string().min(1).max(256) });

/**
 * The admin API's reads beyond calls and status (docs/admin-api.md): tables, functions, a
 * document's history, logs, the deployment and its metrics, and the login-code exchange.
 * HttpApi checks the admin key before `handle` (never before `login`, whose code is the
 * credential). Query parameters are checked: anything malformed is INVALID_ARGUMENT.
 */
export class AdminApi {
  constructor(private readonly sources: AdminSources) {}

  /** Answers `GET /api/admin/<route>` if it is one of these; false otherwise. */
  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<boolean> {
    const route = ROUTES[path.slice("/api/admin/".length)];
    if (route === undefined) return false;
    if (!expectMethod(request, response, "GET")) return true;
    const params = new URL(request.url ?? "/", "http://localhost").searchParams;
    sendJson(response, 200, await route(this.sources, params));
    return true;
  }

  /** `POST /api/admin/login {code}` → `{key}` once per code; FORBIDDEN otherwise. */
  async login(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!expectMethod(request, response, "POST")) return;
    let parsed: z.infer<typeof loginSchema>;
    try {
      parsed = loginSchema.parse(JSON.parse(await readBody(request, 4096)));
    } catch (error) {
      if (error instanceof CairnError) throw error;
      throw new CairnError("PROTOCOL_INVALID", "the body must be {\"code\": \"<login code>\"}");
    }
    const { loginCodes, adminKey } = this.sources;
    if (loginCodes === null || adminKey === null || !loginCodes.redeem(parsed.code)) {
      throw new CairnError("FORBIDDEN", "the login code is unknown, spent or expired: start `cairn dev` again for a new link, or log in with the admin key");
    }
    sendJson(response, 200, { key: adminKey });
  }
}

type Route = (sources: AdminSources, params: URLSearchParams) => unknown;

const ROUTES: Readonly<Record<string, Route>> = {
  tables: (sources) => sources.tables(),
  functions: (sources) => sources.functions(),
  history: (sources, params) => {
    const id = params.get("id");
    if (id === null || id.length === 0) throw new CairnError("INVALID_ARGUMENT", "history needs ?id=<document id>");
    return sources.history(id, integerParam(params, "limit", HISTORY_LIMIT_DEFAULT, 1, LOCAL_HISTORY_REVISIONS_MAX));
  },
  logs: (sources, params) => {
    const query: { -readonly [Key in keyof LogQuery]: LogQuery[Key] } = {};
    for (const name of ["function", "level", "text"] as const) {
      const value = params.get(name);
      if (value !== null && value.length > 0) query[name] = value;
    }
    if (params.has("limit")) query.limit = integerParam(params, "limit", 0, 1, Number.MAX_SAFE_INTEGER);
    return sources.logs(query);
  },
  deployment: (sources) => sources.deployment(),
  metrics: (sources) => sources.metrics(),
};

function integerParam(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = params.get(name);
  if (text === null || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new CairnError("INVALID_ARGUMENT", `${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(text)}`);
  return value;
}
