import type { CallAnswer, FunctionKind, WireValue } from "./adminTypes.js";

/**
 * The admin API over HTTP, with the key in the Authorization header (never in a URL).
 * Every failure is an AdminError carrying the server's `{error: {code, message}}`, or
 * a network/parse problem, so that a view can show it inline instead of breaking.
 */
export class AdminError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The identity an admin call runs as, instead of as the admin (`subject` plus any claims). */
export type CallIdentity = { readonly subject: string } & Readonly<Record<string, WireValue>>;

export class AdminApi {
  constructor(private readonly key: string) {}

  get<T>(path: string, query: Readonly<Record<string, string | number | undefined>> = {}): Promise<T> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== "") search.set(name, String(value));
    const suffix = search.size > 0 ? `?${search.toString()}` : "";
    return this.request<T>("GET", `/api/admin/${path}${suffix}`);
  }

  /** Runs a function (app, internal or `_system:*`); `args` in the JSON value encoding. */
  call(kind: FunctionKind, path: string, args: WireValue, identity?: CallIdentity): Promise<CallAnswer> {
    return this.request<CallAnswer>("POST", `/api/admin/${kind}`, { path, args, ...(identity !== undefined ? { identity } : {}) });
  }

  private async request<T>(method: "GET" | "POST", url: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Admin ${this.key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), cache: "no-store" });
    } catch (error) {
      throw new AdminError("NETWORK", `the node did not answer: ${(error as Error).message}`, 0);
    }
    return answerOf<T>(response);
  }
}

/** The JSON answer, or an AdminError from the server's error body (or its status when the body is not one). */
export async function answerOf<T>(response: Response): Promise<T> {
  const text = await response.text();
  let json: unknown = undefined;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: reported below from the status and the text.
  }
  if (response.ok && json !== undefined) return json as T;
  const error = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (error !== undefined && typeof error.code === "string") {
    throw new AdminError(error.code, typeof error.message === "string" ? error.message : error.code, response.status);
  }
  const snippet = text.trim().slice(0, 200);
  throw new AdminError(response.ok ? "BAD_ANSWER" : `HTTP_${response.status}`, `${response.status} ${response.statusText}${snippet ? `: ${snippet}` : ""}`, response.status);
}

/** Whether the server refused the key (403 FORBIDDEN). */
export function isRefusedKey(error: unknown): boolean {
  return error instanceof AdminError && (error.status === 403 || error.code === "FORBIDDEN");
}

/** A message for any failure, for an inline error line. */
export function messageOf(error: unknown): string {
  if (error instanceof AdminError) return `${error.code}: ${error.message}`;
  if (error !== null && typeof error === "object" && "code" in error && "message" in error) {
    return `${String((error as { code: unknown }).code)}: ${String((error as { message: unknown }).message)}`;
  }
  return error instanceof Error ? error.message : String(error);
}
