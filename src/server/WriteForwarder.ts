import { CairnError } from "../base/errors.js";
import { FORWARDED_ACTION_TIMEOUT_MS, FORWARDED_MUTATION_TIMEOUT_MS } from "../base/limits.js";
import type { UserIdentity } from "../functions/index.js";
import { errorFromPayload, type ErrorPayload } from "../sync/index.js";

/** Who writes the shard, as the manifest names it. */
export interface WriterLocation {
  readonly nodeId: string;
  readonly url: string | null;
}

export interface WriteForwarderOptions {
  /** The deployment's admin key: forwarded calls are admin calls at the writer. */
  readonly adminKey: string | null;
  /** The writer named by the last manifest this node read (null: none). */
  readonly writer: () => WriterLocation | null;
  /** Re-reads the manifest and returns the writer it names. */
  readonly refreshWriter: () => Promise<WriterLocation | null>;
  /** This node's id: a manifest naming it while it does not write means a lease being re-acquired. */
  readonly selfNodeId: string;
  /** For tests: the request function (default: global fetch). */
  readonly fetch?: typeof fetch;
}

export interface ForwardedCall {
  readonly path: string;
  /** Arguments in Cairn's JSON value encoding. */
  readonly args: unknown;
  readonly identity: UserIdentity | null;
  readonly clientId?: string;
  readonly seq?: number;
}

/** A forwarded call's answer at the writer: the value encoded, and the commit ts of a mutation. */
export interface ForwardedAnswer {
  readonly value: unknown;
  readonly ts?: number;
  readonly replayed?: boolean;
}

/** Answers at which a second try, after re-reading the manifest, may find the right writer. */
const REROUTE_CODES = new Set(["NOT_WRITER", "FENCED", "ENGINE_CLOSED", "ENGINE_POISONED", "SERVER_STOPPING"]);

/**
 * A replica's path for writes (DESIGN.md §9): mutations and actions go to the shard's
 * writer as the manifest names it (`writer.url`), as admin calls carrying the caller's
 * verified identity and its `(clientId, seq)`.
 *
 * Invariants:
 * - The caller's receipt key travels unchanged, so a second try (or a client's re-send)
 *   after an answer was lost is answered from the receipt and never applied twice. The
 *   node gives every forwarded mutation a key (its own when the client sent none).
 * - One retry, after re-reading the manifest, when the writer did not answer or answered
 *   that it is not (or no longer) the writer (an action only if it surely did not run:
 *   actions carry no receipt). Then WRITER_UNAVAILABLE, which says whether
 *   the outcome is unknown.
 * - An answer the writer gave about the call itself (invalid arguments, a conflict, the
 *   function's own error) is passed through as it came.
 */
export class WriteForwarder {
  private readonly fetch: typeof fetch;

  constructor(private readonly options: WriteForwarderOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  mutation(call: ForwardedCall): Promise<ForwardedAnswer> {
    return this.forward("mutation", call, FORWARDED_MUTATION_TIMEOUT_MS);
  }

  action(call: ForwardedCall): Promise<ForwardedAnswer> {
    return this.forward("action", call, FORWARDED_ACTION_TIMEOUT_MS);
  }

  private async forward(kind: "mutation" | "action", call: ForwardedCall, timeoutMs: number): Promise<ForwardedAnswer> {
    const adminKey = this.options.adminKey;
    if (adminKey === null) {
      throw new CairnError("WRITER_UNAVAILABLE", `this node is a replica and forwards ${kind}s to the writer with the deployment's admin key, but none is set: start it with CAIRN_ADMIN_KEY (the writer's)`);
    }
    let writer = this.options.writer();
    if (writer === null || writer.url === null || writer.nodeId === this.options.selfNodeId) writer = await this.options.refreshWriter();
    const first = await this.tryOnce(kind, writer, adminKey, call, timeoutMs);
    if (first.kind === "answer") return first.answer;
    if (first.kind === "error") throw first.error;
    // An action carries no receipt: one that may have run is never sent again.
    if (kind === "action" && first.failure.outcomeUnknown) throw unavailable(kind, first.failure, first.failure);
    // The owner changed or did not answer: re-read the manifest and try once more.
    const second = await this.tryOnce(kind, await this.options.refreshWriter(), adminKey, call, timeoutMs);
    if (second.kind === "answer") return second.answer;
    if (second.kind === "error") throw second.error;
    throw unavailable(kind, first.failure, second.failure);
  }

  private tryOnce(kind: string, writer: WriterLocation | null, adminKey: string, call: ForwardedCall, timeoutMs: number): Promise<PostOutcome> {
    const problem = routeProblem(writer, this.options.selfNodeId);
    if (problem !== null) return Promise.resolve({ kind: "failure", failure: problem });
    return this.post(kind, writer!.url!, adminKey, call, timeoutMs);
  }

  private async post(kind: string, baseUrl: string, adminKey: string, call: ForwardedCall, timeoutMs: number): Promise<PostOutcome> {
    let response: Response;
    try {
      response = await this.fetch(new URL(`api/internal/forward/${kind}`, baseUrl), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Admin ${adminKey}` },
        body: JSON.stringify(call),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // Refused before a connection existed: it did not run. Anything else (a reset, a
      // timeout) may have come after the writer ran it: the outcome is unknown, and the
      // receipt key is what makes the retry safe.
      const code = fetchErrorCode(error);
      const neverSent = code !== null && NOT_CONNECTED_CODES.has(code);
      const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
      const reason = timedOut ? `no answer within ${timeoutMs / 1000} s` : `${neverSent ? "not reachable" : "connection lost"} (${code ?? describeFetchError(error)})`;
      return { kind: "failure", failure: { reason, outcomeUnknown: !neverSent, url: baseUrl } };
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      return { kind: "failure", failure: { reason: `answered HTTP ${response.status} without a JSON body`, outcomeUnknown: true, url: baseUrl } };
    }
    if (response.ok) return { kind: "answer", answer: body as ForwardedAnswer };
    const payload = (body as { error?: ErrorPayload }).error;
    if (payload === undefined || typeof payload.code !== "string") {
      return { kind: "failure", failure: { reason: `answered HTTP ${response.status} without an error`, outcomeUnknown: true, url: baseUrl } };
    }
    if (REROUTE_CODES.has(payload.code)) {
      // ENGINE_POISONED means the writer itself does not know whether it committed.
      return { kind: "failure", failure: { reason: `answered ${payload.code}: ${payload.message}`, outcomeUnknown: payload.code === "ENGINE_POISONED", url: baseUrl } };
    }
    return { kind: "error", error: errorFromPayload(payload) };
  }
}

interface RouteFailure {
  readonly reason: string;
  readonly outcomeUnknown: boolean;
  readonly url: string | null;
}

type PostOutcome =
  | { readonly kind: "answer"; readonly answer: ForwardedAnswer }
  | { readonly kind: "error"; readonly error: CairnError }
  | { readonly kind: "failure"; readonly failure: RouteFailure };

function routeProblem(writer: WriterLocation | null, selfNodeId: string): RouteFailure | null {
  if (writer === null) return { reason: "the manifest names no writer (none is running, or it stopped)", outcomeUnknown: false, url: null };
  if (writer.nodeId === selfNodeId) return { reason: "the manifest names this node, which is re-acquiring its lease", outcomeUnknown: false, url: null };
  if (writer.url === null) return { reason: `the writer ${writer.nodeId} published no URL`, outcomeUnknown: false, url: null };
  return null;
}

function unavailable(kind: string, first: RouteFailure, last: RouteFailure): CairnError {
  const outcomeUnknown = last.outcomeUnknown || first.outcomeUnknown;
  const tail = outcomeUnknown ? "; whether it ran is unknown: send it again with the same (clientId, seq) to learn its result without running it twice" : "; it did not run";
  const again = last.reason === first.reason ? "" : `; after re-reading the manifest: ${last.reason}`;
  return new CairnError("WRITER_UNAVAILABLE", `could not forward the ${kind} to the shard's writer: ${first.reason}${again}${tail}`, {
    details: { outcomeUnknown, ...(last.url !== null ? { writerUrl: last.url } : {}) },
  });
}

/** Connection errors that mean the request never reached a server. */
const NOT_CONNECTED_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function fetchErrorCode(error: unknown): string | null {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return cause !== undefined && typeof cause.code === "string" ? cause.code : null;
}

function describeFetchError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
