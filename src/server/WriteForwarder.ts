import { type Clock, ConditionWaiters, CairnError, FORWARDED_ACTION_TIMEOUT_MS } from "../base/index.js";
import type { ForwardedAnswer, ForwardedCall, ForwardedKind, PeerClient } from "../fleet/index.js";
import { errorFromPayload, type ErrorPayload } from "../sync/index.js";

/** Who writes the shard, as the manifest names it. */
export interface WriterLocation {
  readonly nodeId: string;
  readonly url: string | null;
}

export interface WriteForwarderOptions {
  /** How calls reach the writer, as admin calls (null: this node has no admin key and cannot forward). */
  readonly peers: PeerClient | null;
  /** The writer named by the last manifest this node read (null: none). */
  readonly writer: () => WriterLocation | null;
  /** Re-reads the manifest and returns the writer it names. */
  readonly refreshWriter: () => Promise<WriterLocation | null>;
  /** This node's id: a manifest naming it while it does not write means a lease being re-acquired. */
  readonly selfNodeId: string;
  readonly clock: Clock;
}

/** Answers at which a second try, after re-reading the manifest, may find the right writer. */
const REROUTE_CODES = new Set(["NOT_WRITER", "FENCED", "ENGINE_CLOSED", "ENGINE_POISONED", "SERVER_STOPPING"]);

/** One try of a forwarded call: the writer's answer, its error about the call itself, or a routing failure. */
export type ForwardAttempt =
  | { readonly kind: "answer"; readonly answer: ForwardedAnswer }
  | { readonly kind: "error"; readonly error: CairnError }
  | { readonly kind: "failure"; readonly failure: RouteFailure };

export interface RouteFailure {
  readonly reason: string;
  /** Whether the writer may have run the call (the request reached it, or may have). */
  readonly outcomeUnknown: boolean;
  readonly url: string | null;
  /** The try was abandoned because a newer epoch names another writer: re-route at once. */
  readonly rerouted?: boolean;
  /** This node is stopping (close): no further try, answer the caller now. */
  readonly final?: boolean;
}

/**
 * A replica's path for writes (DESIGN.md §9): mutations and actions go to the shard's
 * writer as the manifest names it (`writer.url`), as admin calls carrying the caller's
 * verified identity and its `(clientId, seq)`.
 *
 * Invariants:
 * - The caller's receipt key travels unchanged, so another try (or a client's re-send)
 *   after an answer was lost is answered from the receipt and never applied twice. The
 *   node gives every forwarded mutation a key (its own when the client sent none) and
 *   names it in a WRITER_UNAVAILABLE whose outcome is unknown.
 * - A mutation is tried one attempt at a time (`attemptMutation`), each bounded by the
 *   caller's timeout (a lease: a writer silent that long has lost it or will) and
 *   abandoned at once when a newer epoch names another writer (`writerChanged`); the
 *   caller re-routes. An action is tried once more after re-reading the manifest only if
 *   it surely did not run (actions carry no receipt). Then WRITER_UNAVAILABLE, which
 *   says whether the outcome is unknown.
 * - An answer the writer gave about the call itself (invalid arguments, a conflict, the
 *   function's own error) is passed through as it came.
 */
export class WriteForwarder {
  /** Tries in flight, each with the writer it went to and how to abandon it. */
  private readonly inFlight = new Set<{ readonly nodeId: string; readonly abandon: AbortController }>();
  /** Bumped at every route change; waiters for a change compare against it. */
  private routeVersion = 0;
  private readonly routeWaiters: ConditionWaiters;
  private closed = false;

  constructor(private readonly options: WriteForwarderOptions) {
    this.routeWaiters = new ConditionWaiters(options.clock);
  }

  /**
   * A newer epoch of the shard names `writer` (null: none, or this node): tries in flight
   * to any other node are abandoned — that node lost the lease, and a call it has not
   * answered may hang as long as it is frozen — and whoever waits for a route change
   * goes on. An abandoned mutation is re-routed with its receipt key (never applied twice).
   */
  writerChanged(writer: WriterLocation | null): void {
    for (const attempt of this.inFlight) if (attempt.nodeId !== writer?.nodeId) attempt.abandon.abort();
    this.routeVersion++;
    this.routeWaiters.notify();
  }

  /**
   * The node stops (after its server drained): tries still in flight are abandoned and no
   * new one starts, so nothing this forwarder waits for outlives the node. A mutation
   * abandoned here may have run: its caller is told so, with its receipt key.
   */
  close(): void {
    this.closed = true;
    for (const attempt of this.inFlight) attempt.abandon.abort();
    this.routeVersion++;
    this.routeWaiters.settleAll();
  }

  /** Resolves once the route changes (writerChanged) or after `timeoutMs`, whichever is first. */
  async routeChange(timeoutMs: number): Promise<void> {
    const seen = this.routeVersion;
    if (this.closed) return;
    await this.routeWaiters.wait(() => this.routeVersion !== seen, timeoutMs);
  }

  /**
   * One try of a mutation at the writer the manifest names now (re-read first when asked,
   * or when it names none or this node), abandoned after `timeoutMs` or when the route
   * changes.
   * The caller re-routes a failure; the receipt key in `call` makes that safe.
   */
  attemptMutation(call: ForwardedCall, timeoutMs: number, rereadManifest: boolean): Promise<ForwardAttempt> {
    return this.attempt("mutation", call, timeoutMs, rereadManifest);
  }

  /**
   * An action at the shard's writer. It carries no receipt: one that may have run is never
   * sent again; one that surely did not (refused before it ran, no writer) is tried once
   * more after re-reading the manifest. Then WRITER_UNAVAILABLE, saying which it was.
   */
  async action(call: ForwardedCall): Promise<ForwardedAnswer> {
    const first = await this.attempt("action", call, FORWARDED_ACTION_TIMEOUT_MS, false);
    if (first.kind === "answer") return first.answer;
    if (first.kind === "error") throw first.error;
    if (first.failure.outcomeUnknown) throw forwardUnavailable("action", [first.failure]);
    const second = await this.attempt("action", call, FORWARDED_ACTION_TIMEOUT_MS, true);
    if (second.kind === "answer") return second.answer;
    if (second.kind === "error") throw second.error;
    throw forwardUnavailable("action", [first.failure, second.failure]);
  }

  private async attempt(kind: ForwardedKind, call: ForwardedCall, timeoutMs: number, reread: boolean): Promise<ForwardAttempt> {
    const peers = this.options.peers;
    if (peers === null) {
      throw new CairnError("WRITER_UNAVAILABLE", `this node does not write the shard and forwards ${kind}s to its writer with the deployment's admin key, but none is set: start it with CAIRN_ADMIN_KEY (the writer's)`);
    }
    if (this.closed) return { kind: "failure", failure: STOPPING };
    let writer = this.options.writer();
    if (reread || writer === null || writer.url === null || writer.nodeId === this.options.selfNodeId) writer = await this.options.refreshWriter();
    const problem = routeProblem(writer, this.options.selfNodeId);
    if (problem !== null) return { kind: "failure", failure: problem };
    const abandon = new AbortController();
    const entry = { nodeId: writer!.nodeId, abandon };
    this.inFlight.add(entry);
    try {
      return await this.post(peers, kind, writer!.url!, call, timeoutMs, abandon.signal);
    } finally {
      this.inFlight.delete(entry);
    }
  }

  private async post(peers: PeerClient, kind: ForwardedKind, baseUrl: string, call: ForwardedCall, timeoutMs: number, abandoned: AbortSignal): Promise<ForwardAttempt> {
    const reply = await peers.forward(baseUrl, kind, call, timeoutMs, abandoned);
    if (reply.kind === "unanswered") {
      if (reply.abandoned) return abandonedTry(baseUrl, this.closed);
      // Refused before a connection existed: it did not run. Anything else (a reset, a
      // timeout) may have come after the writer ran it: the outcome is unknown, and the
      // receipt key is what makes the retry safe.
      const reason = reply.timedOut ? `no answer within ${timeoutMs / 1000} s` : reply.reason;
      return { kind: "failure", failure: { reason, outcomeUnknown: !reply.neverSent, url: baseUrl } };
    }
    if (reply.bodyInvalid) return { kind: "failure", failure: { reason: `answered HTTP ${reply.status} without a JSON body`, outcomeUnknown: true, url: baseUrl } };
    if (reply.ok) return { kind: "answer", answer: reply.body as ForwardedAnswer };
    const payload = (reply.body as { error?: ErrorPayload } | null)?.error;
    if (payload === undefined || typeof payload.code !== "string") {
      return { kind: "failure", failure: { reason: `answered HTTP ${reply.status} without an error`, outcomeUnknown: true, url: baseUrl } };
    }
    if (REROUTE_CODES.has(payload.code)) {
      // ENGINE_POISONED means the writer itself does not know whether it committed.
      return { kind: "failure", failure: { reason: `answered ${payload.code}: ${payload.message}`, outcomeUnknown: payload.code === "ENGINE_POISONED", url: baseUrl } };
    }
    return { kind: "error", error: errorFromPayload(payload) };
  }
}

/** A try refused because this node is stopping: it was never sent. */
const STOPPING: RouteFailure = { reason: "this node is stopping", outcomeUnknown: false, url: null, final: true };

/** A try abandoned on the wire: the writer may have run it. */
function abandonedTry(url: string, stopping: boolean): ForwardAttempt {
  return stopping
    ? { kind: "failure", failure: { reason: "abandoned: this node is stopping", outcomeUnknown: true, url, final: true } }
    : { kind: "failure", failure: { reason: "abandoned: a newer epoch names another writer", outcomeUnknown: true, url, rerouted: true } };
}

function routeProblem(writer: WriterLocation | null, selfNodeId: string): RouteFailure | null {
  if (writer === null) return { reason: "the manifest names no writer (none is running, or it stopped)", outcomeUnknown: false, url: null };
  if (writer.nodeId === selfNodeId) return { reason: "the manifest names this node, which is re-acquiring its lease", outcomeUnknown: false, url: null };
  if (writer.url === null) return { reason: `the writer ${writer.nodeId} published no URL`, outcomeUnknown: false, url: null };
  return null;
}

/**
 * WRITER_UNAVAILABLE after `failures` (in order): whether the call may have run, and the
 * receipt key to re-send a mutation with (`receipt`), so the caller can learn its result.
 */
export function forwardUnavailable(kind: string, failures: readonly RouteFailure[], receipt?: { readonly clientId: string; readonly seq: number }): CairnError {
  const first = failures[0]!;
  const last = failures[failures.length - 1]!;
  const outcomeUnknown = failures.some((failure) => failure.outcomeUnknown);
  const tail = !outcomeUnknown
    ? "; it did not run"
    : receipt !== undefined
      ? `; whether it ran is unknown: send it again with clientId ${JSON.stringify(receipt.clientId)} and seq ${receipt.seq} to learn its result without running it twice`
      : "; whether it ran is unknown";
  const tries = failures.length === 1 ? "" : ` (${failures.length} tries; the last: ${last.reason})`;
  return new CairnError("WRITER_UNAVAILABLE", `could not forward the ${kind} to the shard's writer: ${first.reason}${tries}${tail}`, {
    details: { outcomeUnknown, ...(last.url !== null ? { writerUrl: last.url } : {}), ...(receipt !== undefined && outcomeUnknown ? { clientId: receipt.clientId, seq: receipt.seq } : {}) },
  });
}
