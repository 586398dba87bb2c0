import {
  CairnError,
  errorKindOf,
  SESSION_FRAME_BYTES_MIN,
  SESSION_INBOUND_BYTES_MAX,
  SESSION_QUERIES_MAX,
  SESSION_QUERY_ARGS_BYTES_MAX,
  SESSION_REFUSED_QUERIES_MAX,
  SESSION_REMOVED_UNSENT_MAX,
  SESSION_REQUESTS_IN_FLIGHT_MAX,
  SESSION_TOPICS_MAX,
  SESSION_ADMIN_KEY_REFUSALS_MAX,
} from "../base/index.js";
import type { UserIdentity } from "../functions/index.js";
import { compareBytes, type DocumentId, type IntervalHandle, type KeyRange, type Value, decodeValue, encodeValue } from "../model/index.js";
import type { DiffRow } from "../functions/index.js";
import { DiffState, type DiffStep } from "./DiffState.js";
import { rangesOf, type ResumableQuery, type ResumeRegistry } from "./ResumeRegistry.js";
import { Outbox, type FrameSink, type OutboxLimits } from "./Outbox.js";
import { closeReason } from "./closeReason.js";
import { CLOSE_CODES, encodeMessage, errorPayload, isInternalError, parseClientMessage, type ClientMessage, type ErrorPayload, type MutationEntry, type ServerMessage, type Version } from "./protocol.js";
import { subscriptionDigest, type QueryResult, type SharedQueryRuns } from "./SharedQueryRuns.js";
import type { RecentCommits } from "./RecentCommits.js";
import type { SyncBackend } from "./SyncBackend.js";
import type { TokenVerifier, VerifiedToken } from "./TokenVerifier.js";
import { resultHash } from "./resultHash.js";
import { sameSecret } from "./sameSecret.js";

/** The socket under a session. `close` sends a close frame after what was sent; `terminate` drops it. */
export interface SessionTransport extends FrameSink {
  close(code: number, reason: string): void;
  terminate(): void;
}

/** A node's function logs as a session follows them: `send` gets LogEntries frames until `stop`. */
export interface LogSource {
  follow(send: (frame: Extract<ServerMessage, { type: "LogEntries" }>) => void): { stop(): void };
}

/** What a session needs from the handler that owns it. */
export interface SessionHost {
  readonly backend: SyncBackend;
  readonly verifier: TokenVerifier | null;
  readonly shared: SharedQueryRuns;
  readonly recent: RecentCommits;
  /** Closed sessions' subscriptions, for a reconnecting client to resume. */
  readonly resume: ResumeRegistry;
  /** Counts a query answered QueryUnchanged from a resumed registration, without a run. */
  resumed(): void;
  /** Counts QueryDiffs put in a Transition. */
  diffsSent(count: number): void;
  readonly outboxLimits: OutboxLimits;
  /** How long Connect waits for the frontier to reach the client's maxObservedTs. */
  readonly connectFrontierWaitMs: number;
  /** The newest ts announced to the handler: every session's results are valid there. */
  readonly currentTs: number;
  /** The deployment's admin key (null: no session can become an admin's). */
  readonly adminKey: string | null;
  /** The node's function logs, for admin sessions (null: none kept). */
  readonly logs: LogSource | null;
  /** Resolves true once `currentTs >= ts`, false after `timeoutMs`. */
  waitForTs(ts: number, timeoutMs: number): Promise<boolean>;
  register(session: Session, queryId: number, ranges: readonly KeyRange[]): IntervalHandle[];
  unregister(handles: readonly IntervalHandle[]): void;
  mutationStarted(session: Session): void;
  mutationFinished(session: Session): void;
  /**
   * A diffable result moved from its ts to `ts` by the commits between (DiffState.advance
   * over the handler's recent revisions); null when those are no longer known or the
   * rows cannot tell: the query runs again.
   */
  diffStep(state: DiffState, ts: number): DiffStep | null;
  /** Queue a commit item for `session` once `currentTs` reaches `ts` (its answered mutation's commit). */
  oweTransition(session: Session, ts: number): void;
  listen(session: Session, topic: string, on: boolean): void;
  publish(topic: string, eventText: string): void;
  closed(session: Session, reason: string): void;
  log(line: string): void;
}

/**
 * A query of the session's set. One that runs keeps its decoded arguments and their
 * digest (the shared-run key), never their text; one refused when it was added (over a
 * session limit, or arguments that do not decode) keeps only its QueryFailed result.
 */
type SubscribedQuery = RunnableQuery | RefusedQuery;

interface RunnableQuery {
  readonly kind: "runnable";
  readonly queryId: number;
  readonly path: string;
  readonly args: Value;
  /** subscriptionDigest(path, args text). */
  readonly digest: string;
  /** Characters of the arguments' JSON text (counted against SESSION_QUERY_ARGS_BYTES_MAX). */
  readonly argsChars: number;
  /** Hash of the result last put in a Transition (null: none yet). */
  hash: string | null;
  handles: IntervalHandle[];
  /** A session that takes diffs: the diffable result last sent (null: the result is not diffable). */
  diff: DiffState | null;
  /** With `diff`: the index registration of each row's document point, by id (the covered range is `handles`). */
  points: Map<DocumentId, IntervalHandle> | null;
  /** With `diff`: the range `handles` holds. */
  covered: KeyRange | null;
  /** What the result last installed read (for a diffable one, what its state records): kept for resume. */
  readRanges: readonly KeyRange[];
}

interface RefusedQuery {
  readonly kind: "refused";
  readonly queryId: number;
  readonly result: QueryResult;
  hash: string | null;
  handles: IntervalHandle[];
}

type ModifyQuerySet = Extract<ClientMessage, { type: "ModifyQuerySet" }>;

type WorkItem =
  /** `rerun`: the store or the code was replaced, so no diff may stand in for a run. */
  | { readonly kind: "commit"; ts: number; readonly queryIds: Set<number>; readonly waitFor: Promise<void>[]; rerun: boolean }
  | { readonly kind: "reset"; readonly queryId: number; readonly release: () => void }
  | { readonly kind: "modify"; readonly message: ModifyQuerySet; readonly validAt: number; readonly release: () => void }
  | { readonly kind: "identity"; readonly identity: Identity; readonly validAt: number }
  | { readonly kind: "refresh" };

interface Identity {
  readonly user: UserIdentity | null;
  /** The token's hash ("" anonymous). */
  readonly tokenKey: string;
  /** Subscriptions are shared between sessions with equal keys: the token's, marked for an admin's. */
  readonly key: string;
  readonly expiresAtMs: number | null;
  /** An admin session (AdminAuth): internal and system functions may be called, logs followed. */
  readonly admin: boolean;
}

const ANONYMOUS: Identity = { user: null, tokenKey: "", key: "", expiresAtMs: null, admin: false };

function identityOf(user: UserIdentity | null, tokenKey: string, expiresAtMs: number | null, admin: boolean): Identity {
  return { user, tokenKey, key: admin ? `admin:${tokenKey}` : tokenKey, expiresAtMs, admin };
}

/**
 * One client connection's state: its query set, its identity, its requests and its
 * outgoing frames (DESIGN.md §8).
 *
 * Lifecycle: awaitingConnect --Connect--> open --close/terminate/fatal--> closed. Any
 * frame but Connect first is fatal; after `closed` nothing is sent and no work runs.
 *
 * Ordering: everything that changes what the client sees — query-set changes, commit
 * fan-out, identity changes, resyncs — is a work item processed one at a time in
 * arrival order, so Transitions leave in version order and never carry an older result
 * after a newer one. Inbound frames are taken in order too (a Mutation after a SetAuth
 * runs as the new identity).
 *
 * Bounds (base/limits.ts): SESSION_QUERIES_MAX queries that run, holding at most
 * SESSION_QUERY_ARGS_BYTES_MAX of arguments; SESSION_REFUSED_QUERIES_MAX refused ones;
 * SESSION_INBOUND_BYTES_MAX of frames received and not finished; SESSION_REQUESTS_IN_FLIGHT_MAX
 * requests; SESSION_TOPICS_MAX topics; SESSION_REMOVED_UNSENT_MAX removals owed to a
 * resync; the outbox's budgets. Work items are bounded by the frames that made them
 * (consecutive commit items merge, as do consecutive identity items).
 *
 * Invariants:
 * - every query of the session is valid at `sentVersion.ts`: a commit touching one of
 *   them queues a work item before any later item, and results are only ever computed
 *   at or after `sentVersion.ts`;
 * - a query's read ranges are in the subscription index from the end of its run; commits
 *   between its run's ts and that moment are checked against RecentCommits;
 * - mutations run one at a time, in the order sent; a MutationResponse is handed to the
 *   outbox before any Transition whose ts covers the commit (commit items wait for the
 *   mutation that was committing when they were queued), and only once the runtime
 *   reports the commit durable;
 * - once a mutation is answered with ts, a Transition to a ts at or above it follows,
 *   empty if none of the session's queries changed — once the node's common frontier
 *   (`host.currentTs`) has reached ts, never before: no Transition and no query run is
 *   ever above the frontier, where another shard's older commit may still be in flight.
 */
export class Session {
  readonly outbox: Outbox;
  private state: "awaitingConnect" | "open" | "closed" = "awaitingConnect";
  private identity: Identity = ANONYMOUS;
  /** The identity subscriptions run as (changes in work order, after `identity`). */
  private queryIdentity: Identity = ANONYMOUS;
  private readonly queries = new Map<number, SubscribedQuery>();
  private runnableQueries = 0;
  private refusedQueries = 0;
  private argsChars = 0;
  /** Characters of frames received and not finished (see SESSION_INBOUND_BYTES_MAX). */
  private inboundChars = 0;
  private querySet = 0;
  /** The version of the last Transition produced (handed to the outbox). */
  private sentVersion: Version = { querySet: 0, ts: 0 };
  private readonly work: WorkItem[] = [];
  private working = false;
  /** The highest ts among queued items: a mutation answered above it needs an item of its own. */
  private scheduledTs = 0;
  private answeredTs = 0;
  private resyncPending = false;
  private removedSinceHanded = new Set<number>();
  private intake: Promise<void> = Promise.resolve();
  private mutations: Promise<void> = Promise.resolve();
  /** Resolves when the mutation committing now is answered; null when none is. */
  running: Promise<void> | null = null;
  private requestsInFlight = 0;
  private readonly topics = new Set<string>();
  /** The client applies QueryDiffs (Connect `diffs`). */
  private diffs = false;
  /** The client's previous session's subscriptions, claimed at Connect (`resume`), by digest; each answers once. */
  private resumable: { readonly queries: Map<string, ResumableQuery>; readonly sinceTs: number } | null = null;
  /** Wrong admin keys presented so far (SESSION_ADMIN_KEY_REFUSALS_MAX ends the session). */
  private adminKeyRefusals = 0;
  /** The function logs this admin session follows (null: none). */
  private logFeed: { stop(): void } | null = null;
  /** Since when (monotonic ms) the session has been over its limits; null when it is not. */
  overLimitsSinceMs: number | null = null;
  sessionId = "";

  constructor(
    private readonly host: SessionHost,
    private readonly transport: SessionTransport,
  ) {
    this.outbox = new Outbox(
      transport,
      {
        onDropped: (handed, removed) => this.dropped(handed, removed),
        onResponseOverflow: () => this.overloaded("its response budget overflowed (it sends requests but does not read answers)"),
      },
      host.outboxLimits,
    );
  }

  get isClosed(): boolean {
    return this.state === "closed";
  }

  get subscriptionCount(): number {
    return this.queries.size;
  }

  get requestCount(): number {
    return this.requestsInFlight;
  }

  /** Whether the client is not keeping up: frames wait beyond its socket, or a resync is owed. */
  get backlogged(): boolean {
    return this.outbox.backlogged || this.resyncPending;
  }

  /** A frame from the client. Never throws: a bad frame is answered with a typed error. */
  receive(text: string): void {
    if (this.state === "closed") return;
    let message: ClientMessage;
    try {
      message = parseClientMessage(text);
    } catch (error) {
      if (this.state === "awaitingConnect") this.fatal(error);
      else this.respond({ type: "ProtocolError", error: errorPayload(error), ...requestIdOf(text) });
      return;
    }
    const chars = Math.max(text.length, SESSION_FRAME_BYTES_MIN);
    if (this.inboundChars + chars > SESSION_INBOUND_BYTES_MAX) return this.inboundFull(message);
    this.inboundChars += chars;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.inboundChars -= chars;
    };
    this.intake = this.intake.then(() => this.take(message, release)).catch((error: unknown) => this.fatal(error));
  }

  /**
   * A frame past SESSION_INBOUND_BYTES_MAX: a request is refused (it changes nothing and
   * the client may send it again); anything else cannot be skipped without breaking the
   * session's order, so the session ends.
   */
  private inboundFull(message: ClientMessage): void {
    const error = new CairnError("SESSION_LIMIT_EXCEEDED", `a session holds at most ${SESSION_INBOUND_BYTES_MAX} bytes of frames it has not finished; wait for answers before sending more`);
    if (this.state === "open" && (message.type === "Mutation" || message.type === "MutationBatch")) {
      for (const entry of message.type === "Mutation" ? [message] : message.entries) this.respond({ type: "MutationResponse", requestId: entry.requestId, success: false, error: errorPayload(error) });
    } else if (this.state === "open" && message.type === "Action") {
      this.respond({ type: "ActionResponse", requestId: message.requestId, success: false, error: errorPayload(error) });
    } else {
      this.fatal(error);
    }
  }

  /** The socket closed (or the handler closes the session): stop everything, release the index. */
  close(reason: string): void {
    if (this.state === "closed") return;
    if (this.state === "open" && !this.resyncPending) this.host.resume.register(this.sessionId, this.resumableQueries());
    this.state = "closed";
    this.logFeed?.stop();
    this.logFeed = null;
    this.outbox.close();
    for (const query of this.queries.values()) this.unregisterAll(query);
    this.queries.clear();
    this.removedSinceHanded.clear();
    for (const topic of this.topics) this.host.listen(this, topic, false);
    this.topics.clear();
    this.work.length = 0;
    this.host.closed(this, reason);
  }

  /** Ends the session with a FatalError frame and a close (used for protocol violations and shutdown). */
  fatal(error: unknown, code: number = CLOSE_CODES.protocolError): void {
    if (this.state === "closed") return;
    const payload = this.wireError(error, "the session");
    this.transport.send(encodeMessage({ type: "FatalError", error: payload }), () => undefined);
    this.transport.close(code, closeReason(payload.message));
    this.close(`fatal: [${payload.code}] ${payload.message}`);
  }

  /** A commit at `ts` may have changed `queryIds` (or, with none, just advances ts for the origin). */
  enqueueCommit(ts: number, queryIds: Iterable<number>, waitFor: Promise<void>[], rerun = false): void {
    if (this.state !== "open") return;
    const last = this.work[this.work.length - 1];
    if (last !== undefined && last.kind === "commit") {
      // Queued items have not started: one run (or diff) at the newer ts answers both commits.
      last.ts = Math.max(last.ts, ts);
      for (const id of queryIds) last.queryIds.add(id);
      last.waitFor.push(...waitFor);
      last.rerun ||= rerun;
    } else {
      this.work.push({ kind: "commit", ts, queryIds: new Set(queryIds), waitFor, rerun });
    }
    this.scheduledTs = Math.max(this.scheduledTs, ts);
    this.pumpWork();
  }

  /** The local state was replaced at `ts` (a snapshot restore): every query re-runs there. */
  storeReplaced(ts: number): void {
    this.enqueueCommit(ts, this.queries.keys(), [], true);
  }

  /** The token's expiry passed: the session becomes anonymous and is told so. */
  expireIdentity(nowMs: number): void {
    const expiresAt = this.identity.expiresAtMs;
    if (this.state !== "open" || expiresAt === null || nowMs < expiresAt) return;
    this.setIdentity(identityOf(null, "", null, this.identity.admin));
    this.respond({ type: "AuthExpired", error: errorPayload(new CairnError("UNAUTHENTICATED", "the session's token expired; send a new one with SetAuth")) });
  }

  /** Delivers a Broadcast (droppable: presence and the like tolerate loss under backpressure). */
  broadcast(text: string): void {
    if (this.state === "open") this.outbox.droppable(text);
  }

  // ---- inbound ------------------------------------------------------------------------

  /** Takes a frame in arrival order; `release` is called once the frame is finished (its charge ends). */
  private async take(message: ClientMessage, release: () => void): Promise<void> {
    if (this.state === "closed") return;
    if (this.state === "awaitingConnect" && message.type !== "Connect") {
      throw new CairnError("PROTOCOL_INVALID", `the first frame must be Connect, not ${message.type}`);
    }
    // Frames whose work outlives this call hand `release` on; the others finish here.
    switch (message.type) {
      case "ModifyQuerySet":
        return this.enqueue({ kind: "modify", message, validAt: this.host.currentTs, release });
      case "ResetQuery":
        // Charged until processed, like a ModifyQuerySet: a client flooding resets is bounded by its inbound budget.
        return this.enqueue({ kind: "reset", queryId: message.queryId, release });
      case "Mutation":
        return this.startMutations([message], false, release);
      case "MutationBatch":
        return this.startMutations(message.entries, true, release);
      case "Action":
        return this.startAction(message.requestId, message.path, message.args, release);
    }
    try {
      switch (message.type) {
        case "Connect":
          return await this.connect(message);
        case "SetAuth":
          return await this.setAuth(message.token);
        case "Publish":
          return this.publish(message.topic, message.event);
        case "ModifyTopics":
          return this.modifyTopics(message.add, message.remove);
        case "AdminAuth":
          return this.adminAuth(message.key);
        case "SubscribeLogs":
          return this.followLogs(true);
        case "UnsubscribeLogs":
          return this.followLogs(false);
        default:
          return assertNever(message);
      }
    } finally {
      release();
    }
  }

  private async connect(message: Extract<ClientMessage, { type: "Connect" }>): Promise<void> {
    if (this.state === "open") throw new CairnError("PROTOCOL_INVALID", "Connect was already sent on this connection");
    const observed = message.maxObservedTs ?? 0;
    // A client that has seen ts T (from this node before a restart, or from another node)
    // is never served an older state: wait for this node's frontier, or say it is behind.
    if (observed > this.host.currentTs && !(await this.host.waitForTs(observed, this.host.connectFrontierWaitMs))) {
      if (this.state === "closed") return;
      const behind = new CairnError(
        "REPLICA_BEHIND",
        `this node has applied the log through ts ${this.host.currentTs}, older than ts ${observed} the client has already seen; reconnect later or to another node`,
        { details: { frontierTs: this.host.currentTs, maxObservedTs: observed } },
      );
      this.fatal(behind, CLOSE_CODES.behind);
      return;
    }
    if (this.state === "closed") return;
    this.state = "open";
    this.sessionId = message.sessionId;
    this.diffs = message.diffs === true;
    // A resume from the future (or another deployment's ts) claims nothing: every query runs.
    if (message.resume !== undefined && message.resume.sinceTs <= this.host.currentTs) {
      const queries = this.host.resume.claim(message.resume.sessionId);
      if (queries !== null) this.resumable = { queries, sinceTs: message.resume.sinceTs };
    }
    const known: number[] = [];
    const results: { seq: number; value: unknown; ts: number }[] = [];
    if (message.clientId !== undefined) {
      // Only receipts this session's identity wrote (anonymous here, before any SetAuth):
      // another's are left out, and the client re-sends those once its identity is set.
      for (const seq of message.held ?? []) {
        const receipt = this.host.backend.receipt(message.clientId, seq, this.identity.user);
        if (receipt === null) continue;
        known.push(seq);
        results.push({ seq, value: encodeValue(receipt.value), ts: receipt.ts });
      }
    }
    const ts = this.host.currentTs;
    this.sentVersion = { querySet: 0, ts: 0 };
    this.respond({ type: "ConnectAck", deploymentId: this.host.backend.deploymentId, sessionId: message.sessionId, known, results, ts });
  }

  private async setAuth(token: string | null): Promise<void> {
    const admin = this.identity.admin;
    if (token === null) {
      this.setIdentity(identityOf(null, "", null, admin));
      this.respond({ type: "AuthResponse", success: true, subject: null });
      return;
    }
    let verified: VerifiedToken;
    try {
      if (this.host.verifier === null) throw new CairnError("UNAUTHENTICATED", "this server has no token verifier configured (see `cairn serve --help`: --jwt-secret, --jwks)");
      verified = await this.host.verifier.verify(token);
    } catch (error) {
      // A refused token leaves the session anonymous: it never keeps a privilege the client tried to replace.
      this.setIdentity(identityOf(null, "", null, admin));
      this.respond({ type: "AuthResponse", success: false, subject: null, error: errorPayload(error) });
      return;
    }
    this.setIdentity(identityOf(verified.identity, resultHash(token), verified.expiresAtMs, admin));
    this.respond({ type: "AuthResponse", success: true, subject: verified.identity.subject });
  }

  /**
   * AdminAuth: the deployment's admin key makes the session an admin's (null: no longer).
   * A wrong key changes nothing; SESSION_ADMIN_KEY_REFUSALS_MAX of them end the session,
   * so that guessing costs a connection each few tries.
   */
  private adminAuth(key: string | null): void {
    const { adminKey } = this.host;
    const { user, tokenKey, expiresAtMs } = this.identity;
    if (key === null) {
      this.followLogs(false);
      this.setIdentity(identityOf(user, tokenKey, expiresAtMs, false));
      this.respond({ type: "AdminAuthResponse", success: true });
      return;
    }
    if (adminKey === null || !sameSecret(key, adminKey)) {
      const refusal =
        adminKey === null
          ? new CairnError("FORBIDDEN", "admin sessions are disabled: start the server with CAIRN_ADMIN_KEY set")
          : new CairnError("FORBIDDEN", "the admin key was refused");
      this.respond({ type: "AdminAuthResponse", success: false, error: errorPayload(refusal) });
      if (++this.adminKeyRefusals >= SESSION_ADMIN_KEY_REFUSALS_MAX) {
        this.fatal(new CairnError("FORBIDDEN", `${SESSION_ADMIN_KEY_REFUSALS_MAX} wrong admin keys: the session ends`));
      }
      return;
    }
    this.setIdentity(identityOf(user, tokenKey, expiresAtMs, true));
    this.respond({ type: "AdminAuthResponse", success: true });
  }

  /** Starts or stops following the node's function logs (admin sessions only). */
  private followLogs(on: boolean): void {
    if (!on) {
      this.logFeed?.stop();
      this.logFeed = null;
      return;
    }
    const refusal = !this.identity.admin
      ? new CairnError("FORBIDDEN", "function logs are for admin sessions: send AdminAuth with the deployment's admin key first")
      : this.host.logs === null
        ? new CairnError("FUNCTION_NOT_FOUND", "this node keeps no function logs")
        : null;
    if (refusal !== null) return this.respond({ type: "ProtocolError", error: errorPayload(refusal) });
    this.logFeed ??= this.host.logs!.follow((frame) => {
      if (this.state === "open") this.outbox.droppable(encodeMessage(frame));
    });
  }

  private setIdentity(identity: Identity): void {
    const changed = identity.key !== this.identity.key;
    this.identity = identity;
    if (!changed) return;
    const last = this.work[this.work.length - 1];
    // Not started yet: running as the newer identity alone ends in the same state.
    if (last !== undefined && last.kind === "identity") this.work.pop();
    this.enqueue({ kind: "identity", identity, validAt: Math.max(this.host.currentTs, last?.kind === "identity" ? last.validAt : 0) });
  }

  private publish(topic: string, event: unknown): void {
    try {
      decodeValue(event);
    } catch (error) {
      this.respond({ type: "ProtocolError", error: errorPayload(error) });
      return;
    }
    this.host.publish(topic, encodeMessage({ type: "Broadcast", topic, event }));
  }

  private modifyTopics(add: readonly string[], remove: readonly string[]): void {
    for (const topic of remove) {
      if (this.topics.delete(topic)) this.host.listen(this, topic, false);
    }
    for (const topic of add) {
      if (this.topics.has(topic)) continue;
      if (this.topics.size >= SESSION_TOPICS_MAX) {
        const error = new CairnError("SESSION_LIMIT_EXCEEDED", `a session listens to at most ${SESSION_TOPICS_MAX} topics`);
        this.respond({ type: "ProtocolError", error: errorPayload(error) });
        return;
      }
      this.topics.add(topic);
      this.host.listen(this, topic, true);
    }
  }

  // ---- requests -----------------------------------------------------------------------

  private startMutations(entries: readonly MutationEntry[], batch: boolean, release: () => void): void {
    if (this.requestsInFlight + entries.length > SESSION_REQUESTS_IN_FLIGHT_MAX) {
      release();
      const error = new CairnError("SESSION_LIMIT_EXCEEDED", `a session has at most ${SESSION_REQUESTS_IN_FLIGHT_MAX} requests waiting or running`);
      for (const entry of entries) this.respond({ type: "MutationResponse", requestId: entry.requestId, success: false, error: errorPayload(error) });
      return;
    }
    this.requestsInFlight += entries.length;
    const identity = this.identity;
    this.mutations = this.mutations.then(() => this.runMutations(entries, batch, identity)).finally(release);
  }

  private async runMutations(entries: readonly MutationEntry[], batch: boolean, identity: Identity): Promise<void> {
    let stoppedBy: string | null = null;
    for (const entry of entries) {
      if (stoppedBy !== null) {
        const error = new CairnError("MUTATION_NOT_RUN", `not run: mutation ${stoppedBy} before it in the batch failed transiently; send it again`);
        this.respond({ type: "MutationResponse", requestId: entry.requestId, success: false, error: errorPayload(error) });
        this.requestsInFlight--;
        continue;
      }
      const failure = await this.runMutation(entry, identity);
      if (batch && failure !== null && isTransient(failure)) stoppedBy = String(entry.requestId);
    }
  }

  /** Runs one mutation and answers it; returns its error, or null on success. */
  private async runMutation(entry: MutationEntry, identity: Identity): Promise<unknown> {
    let answered!: () => void;
    this.running = new Promise<void>((resolve) => (answered = resolve));
    this.host.mutationStarted(this);
    try {
      const args = decodeValue(entry.args);
      const options = {
        identity: identity.user,
        internal: identity.admin,
        ...(entry.clientId !== undefined ? { clientId: entry.clientId } : {}),
        ...(entry.seq !== undefined ? { seq: entry.seq } : {}),
        ...(entry.ackedThrough !== undefined ? { ackedThrough: entry.ackedThrough } : {}),
      };
      const run = await this.host.backend.runMutation(entry.path, args, options);
      this.respond({
        type: "MutationResponse",
        requestId: entry.requestId,
        success: true,
        value: encodeValue(run.value),
        ts: run.ts,
        ...(run.replayed ? { replayed: true } : {}),
      });
      this.answered(run.ts);
      return null;
    } catch (error) {
      this.respond({ type: "MutationResponse", requestId: entry.requestId, success: false, error: this.wireError(error, `mutation ${entry.path}`) });
      return error;
    } finally {
      this.running = null;
      this.requestsInFlight--;
      this.host.mutationFinished(this);
      answered();
    }
  }

  /**
   * A mutation was answered with `ts`: make sure a Transition at or above it follows. Not
   * before the node's common frontier reaches `ts` (another shard may still have an
   * older commit in flight): until then the handler owes this session a commit item.
   */
  private answered(ts: number): void {
    this.answeredTs = Math.max(this.answeredTs, ts);
    if (ts <= this.scheduledTs) return;
    if (ts <= this.host.currentTs) this.enqueueCommit(this.host.currentTs, [], []);
    else this.host.oweTransition(this, ts);
  }

  private startAction(requestId: number, path: string, args: unknown, release: () => void): void {
    if (this.requestsInFlight >= SESSION_REQUESTS_IN_FLIGHT_MAX) {
      release();
      const error = new CairnError("SESSION_LIMIT_EXCEEDED", `a session has at most ${SESSION_REQUESTS_IN_FLIGHT_MAX} requests waiting or running`);
      this.respond({ type: "ActionResponse", requestId, success: false, error: errorPayload(error) });
      return;
    }
    this.requestsInFlight++;
    const identity = this.identity;
    void (async () => {
      try {
        const run = await this.host.backend.runAction(path, decodeValue(args), { identity: identity.user, internal: identity.admin });
        this.respond({ type: "ActionResponse", requestId, success: true, value: encodeValue(run.value) });
      } catch (error) {
        this.respond({ type: "ActionResponse", requestId, success: false, error: this.wireError(error, `action ${path}`) });
      } finally {
        this.requestsInFlight--;
        release();
      }
    })();
  }

  // ---- work items ---------------------------------------------------------------------

  private enqueue(item: WorkItem): void {
    if (item.kind === "modify" || item.kind === "identity") this.scheduledTs = Math.max(this.scheduledTs, item.validAt);
    this.work.push(item);
    this.pumpWork();
  }

  private pumpWork(): void {
    if (this.working || this.state !== "open" || this.work.length === 0) return;
    this.working = true;
    void this.drainWork();
  }

  private async drainWork(): Promise<void> {
    try {
      while (this.state === "open" && this.work.length > 0) {
        const item = this.work.shift()!;
        try {
          await this.process(item);
        } finally {
          if (item.kind === "modify" || item.kind === "reset") item.release();
        }
      }
    } catch (error) {
      // InvalidInput: the client's fault, told as it is; anything else is logged by fatal.
      this.fatal(errorKindOf(error) === "InvalidInput" ? error : new CairnError("INTERNAL", "the server failed to update this session's queries", { cause: error }));
    } finally {
      this.working = false;
    }
    this.pumpWork();
  }

  private process(item: WorkItem): Promise<void> {
    switch (item.kind) {
      case "commit":
        return this.processCommit(item.ts, item.queryIds, item.waitFor, item.rerun);
      case "modify":
        return this.processModify(item.message, item.validAt);
      case "identity":
        return this.processIdentity(item.identity, item.validAt);
      case "refresh":
        return this.processRefresh();
      case "reset":
        return this.processReset(item.queryId);
      default:
        return assertNever(item);
    }
  }

  private async processCommit(itemTs: number, queryIds: ReadonlySet<number>, waitFor: readonly Promise<void>[], rerun: boolean): Promise<void> {
    // The mutation committing when this commit was announced may be in it: its response goes first.
    await Promise.all(waitFor);
    if (this.resyncPending || this.state !== "open") return;
    const ts = Math.max(itemTs, this.sentVersion.ts);
    const touched = [...queryIds].map((id) => this.queries.get(id)).filter((query) => query !== undefined && query.kind === "runnable");
    // A diffable result moves by the commits' documents, shared with every session at its state; the others run.
    const stepped: { query: RunnableQuery; step: DiffStep }[] = [];
    const queries: RunnableQuery[] = [];
    for (const query of touched) {
      const step = query.diff !== null && !rerun ? this.host.diffStep(query.diff, ts) : null;
      if (step === null) queries.push(query);
      else stepped.push({ query, step });
    }
    const results = await Promise.all(queries.map((query) => this.runAt(query, ts)));
    if (this.state !== "open") return;
    if (results.some(historyGone)) return this.needRefresh();
    const modifications: string[] = [];
    for (const { query, step } of stepped) {
      if (step.bodyText !== null) modifications.push(`{"type":"QueryDiff","queryId":${query.queryId},${step.bodyText}}`);
      this.installStep(query, step);
    }
    if (stepped.length > 0) this.host.diffsSent(modifications.length);
    queries.forEach((query, at) => {
      const result = results[at]!;
      if (result.hash !== query.hash) modifications.push(updatedText(query.queryId, result));
      this.install(query, result);
    });
    const originOwed = this.answeredTs > this.sentVersion.ts && ts >= this.answeredTs;
    if (modifications.length > 0 || originOwed) this.sendTransition(ts, modifications, []);
  }

  private async processModify(message: ModifyQuerySet, validAt: number): Promise<void> {
    if (message.baseVersion !== this.querySet || message.newVersion !== message.baseVersion + 1) {
      throw new CairnError("PROTOCOL_INVALID", `ModifyQuerySet builds on query set ${message.baseVersion} → ${message.newVersion}; the session is at ${this.querySet} (expected ${this.querySet} → ${this.querySet + 1})`);
    }
    this.querySet = message.newVersion;
    const modifications: string[] = [];
    const removed: number[] = [];
    for (const queryId of message.remove) {
      const query = this.queries.get(queryId);
      if (query === undefined) continue;
      this.unregisterAll(query);
      this.forget(query);
      removed.push(queryId);
      modifications.push(`{"type":"QueryRemoved","queryId":${queryId}}`);
    }
    const added: { query: SubscribedQuery; echoedHash: string | undefined }[] = [];
    for (const entry of message.add) {
      if (this.queries.has(entry.queryId)) throw new CairnError("PROTOCOL_INVALID", `query ${entry.queryId} is already in the query set`);
      const query = this.subscribedQuery(entry.queryId, entry.path, entry.args);
      this.queries.set(entry.queryId, query);
      if (query.kind === "runnable") {
        this.runnableQueries++;
        this.argsChars += query.argsChars;
      } else if (++this.refusedQueries > SESSION_REFUSED_QUERIES_MAX) {
        throw new CairnError("SESSION_LIMIT_EXCEEDED", `a session holds at most ${SESSION_REFUSED_QUERIES_MAX} refused queries; remove them before adding more`);
      }
      added.push({ query, echoedHash: entry.resultHash });
    }
    if (this.resyncPending) {
      this.removedUnsent(removed);
      return;
    }
    const ts = Math.max(validAt, this.sentVersion.ts);
    const results = await Promise.all(added.map(({ query, echoedHash }) => this.resumedResult(query, echoedHash, ts) ?? this.runAt(query, ts)));
    if (this.state !== "open") return;
    if (results.some(historyGone)) {
      this.removedUnsent(removed);
      return this.needRefresh();
    }
    added.forEach(({ query, echoedHash }, at) => {
      const result = results[at]!;
      modifications.push(result.hash === echoedHash ? `{"type":"QueryUnchanged","queryId":${query.queryId},"hash":"${result.hash}"}` : updatedText(query.queryId, result));
      this.install(query, result);
    });
    this.sendTransition(ts, modifications, removed);
  }

  private async processIdentity(identity: Identity, validAt: number): Promise<void> {
    this.queryIdentity = identity;
    if (this.resyncPending) return;
    const ts = Math.max(validAt, this.sentVersion.ts);
    if (this.queries.size === 0) return;
    await this.rerunAll(ts, false);
  }

  /** After dropped Transitions: once the socket drains, every query's current result in one Transition. */
  private async processRefresh(): Promise<void> {
    await this.outbox.drained();
    if (this.state !== "open") return;
    const removed = [...this.removedSinceHanded];
    this.removedSinceHanded.clear();
    this.sentVersion = this.outbox.handedVersion;
    this.resyncPending = false;
    await this.rerunAll(Math.max(this.host.currentTs, this.sentVersion.ts), true, removed);
  }

  /**
   * ResetQuery: the client's diff-applied result failed its checksum. The query runs and
   * its whole result goes in a Transition, whatever the hash says. A queryId the session
   * does not hold is a ProtocolError (the session goes on).
   */
  private async processReset(queryId: number): Promise<void> {
    const query = this.queries.get(queryId);
    if (query === undefined) {
      this.respond({ type: "ProtocolError", error: errorPayload(new CairnError("PROTOCOL_INVALID", `ResetQuery names query ${queryId}, which is not in this session's query set`, { details: { queryId } })) });
      return;
    }
    if (this.resyncPending) return;
    const ts = Math.max(this.host.currentTs, this.sentVersion.ts);
    const result = await this.runAt(query, ts);
    if (this.state !== "open") return;
    if (historyGone(result)) return this.needRefresh();
    this.install(query, result);
    this.sendTransition(ts, [updatedText(queryId, result)], []);
  }

  private async rerunAll(ts: number, full: boolean, removed: number[] = []): Promise<void> {
    const queries = [...this.queries.values()];
    const results = await Promise.all(queries.map((query) => this.runAt(query, ts)));
    if (this.state !== "open") return;
    if (results.some(historyGone)) {
      this.removedUnsent(removed);
      return this.needRefresh();
    }
    const modifications = removed.map((queryId) => `{"type":"QueryRemoved","queryId":${queryId}}`);
    queries.forEach((query, at) => {
      const result = results[at]!;
      if (full || result.hash !== query.hash) modifications.push(updatedText(query.queryId, result));
      this.install(query, result);
    });
    if (modifications.length > 0 || full) this.sendTransition(ts, modifications, removed);
  }

  /** History at the item's ts is gone (pruned while the session lagged): start over at the newest ts. */
  private needRefresh(): void {
    if (this.resyncPending) return;
    this.resyncPending = true;
    this.work.unshift({ kind: "refresh" });
  }

  /** A query the client added: runnable, or refused with its error (past a limit, or arguments that do not decode). */
  private subscribedQuery(queryId: number, path: string, args: unknown): SubscribedQuery {
    if (this.runnableQueries >= SESSION_QUERIES_MAX) return refusedQuery(queryId, OVER_QUERIES_LIMIT);
    const argsText = JSON.stringify(args ?? null);
    if (this.argsChars + argsText.length > SESSION_QUERY_ARGS_BYTES_MAX) return refusedQuery(queryId, OVER_ARGS_LIMIT);
    let value: Value;
    try {
      value = decodeValue(args);
    } catch (error) {
      return refusedQuery(queryId, failedResult(error, 0));
    }
    return {
      kind: "runnable",
      queryId,
      path,
      args: value,
      digest: subscriptionDigest(path, argsText),
      argsChars: argsText.length,
      hash: null,
      handles: [],
      diff: null,
      points: null,
      covered: null,
      readRanges: [],
    };
  }

  /**
   * A re-added query's result from the client's previous session (Connect `resume`),
   * without a run: when it ran as the same identity, the client echoes the hash of the
   * result that session last sent, and no commit since (the earlier of the client's ts
   * and the ts that result was known valid at) touched what it read. Null: it runs.
   */
  private resumedResult(query: SubscribedQuery, echoedHash: string | undefined, ts: number): QueryResult | null {
    if (this.resumable === null || echoedHash === undefined || query.kind !== "runnable") return null;
    const resumed = this.resumable.queries.get(query.digest);
    if (resumed === undefined) return null;
    this.resumable.queries.delete(query.digest);
    const sinceTs = this.resumable.sinceTs;
    // Every registered query claimed: nothing more to hold for the session's life.
    if (this.resumable.queries.size === 0) this.resumable = null;
    if (resumed.hash !== echoedHash || resumed.identityKey !== this.queryIdentity.key) return null;
    const readRanges = rangesOf(resumed);
    if (this.host.recent.changedSince(Math.min(resumed.validTs, sinceTs), readRanges)) return null;
    this.host.resumed();
    const diff = this.diffs && resumed.diff !== null ? { diff: resumed.diff } : {};
    return { kind: "ok", payloadText: "", hash: resumed.hash, errorCode: null, readRanges, readTs: ts, ...diff };
  }

  /** What a reconnecting client may resume of this session: every query with a result sent, valid at the sent version. */
  private resumableQueries(): ResumableQuery[] {
    const queries: ResumableQuery[] = [];
    for (const query of this.queries.values()) {
      if (query.kind !== "runnable" || query.hash === null) continue;
      const readRanges = query.diff === null ? query.readRanges : null;
      queries.push({ digest: query.digest, identityKey: this.queryIdentity.key, hash: query.hash, validTs: this.sentVersion.ts, readRanges, diff: query.diff });
    }
    return queries;
  }

  /** Drops a query from the set and from the counts that bound it. */
  private forget(query: SubscribedQuery): void {
    this.queries.delete(query.queryId);
    if (query.kind === "refused") {
      this.refusedQueries--;
    } else {
      this.runnableQueries--;
      this.argsChars -= query.argsChars;
    }
  }

  /** Removals to tell the client in its resync; past SESSION_REMOVED_UNSENT_MAX the session ends. */
  private removedUnsent(removed: Iterable<number>): void {
    for (const queryId of removed) this.removedSinceHanded.add(queryId);
    if (this.removedSinceHanded.size > SESSION_REMOVED_UNSENT_MAX) {
      this.fatal(new CairnError("SESSION_LIMIT_EXCEEDED", `a session not reading its frames may remove at most ${SESSION_REMOVED_UNSENT_MAX} queries before its resync`));
    }
  }

  /** The error's wire form; an Internal failure (a bug) is logged here with its stack, since the client gets no message. */
  private wireError(error: unknown, what: string): ErrorPayload {
    if (isInternalError(error)) this.host.log(`session ${this.sessionId}: ${what} failed: ${stackOf(error)}`);
    return errorPayload(error);
  }

  private runAt(query: SubscribedQuery, ts: number): Promise<QueryResult> {
    if (query.kind === "refused") return Promise.resolve({ ...query.result, readTs: ts });
    const { path, args } = query;
    const identity = this.queryIdentity;
    const describe = this.diffs;
    // Runs for sessions that take diffs are shared among themselves: their results carry row keys and checksums.
    return this.host.shared.run(query.digest, describe ? `${identity.key}\u0000diffs` : identity.key, ts, async () => {
      const run = await this.host.backend.runQuery(path, args, { identity: identity.user, internal: identity.admin, readTs: ts, describe });
      if (run.outcome.kind === "failed") {
        if (isInternalError(run.outcome.error)) this.wireError(run.outcome.error, `query ${path}`);
        return { ...failedResult(run.outcome.error, ts), readRanges: run.readRanges };
      }
      if (run.diffable) {
        const diff = DiffState.of(run.diffable, ts);
        return { kind: "ok", payloadText: diff.valueText(), hash: diff.checksum, errorCode: null, readRanges: run.readRanges, readTs: ts, diff };
      }
      const payloadText = JSON.stringify(encodeValue(run.outcome.value));
      return { kind: "ok", payloadText, hash: resultHash(payloadText), errorCode: null, readRanges: run.readRanges, readTs: ts };
    });
  }

  /** Puts the run's read ranges in the index; commits since its ts that touched them queue a re-run. */
  private install(query: SubscribedQuery, result: QueryResult): void {
    query.hash = result.hash;
    if (query.kind === "refused") {
      this.unregisterAll(query);
      query.handles = this.host.register(this, query.queryId, result.readRanges);
      return this.recheck(query, result);
    }
    const diff = this.diffs ? (result.diff ?? null) : null;
    // A diff's registration is kept by rows, not by a range list: it is replaced whole.
    if (query.diff !== null || diff !== null) this.unregisterAll(query);
    query.diff = diff;
    if (diff === null) {
      this.reregister(query, result.readRanges);
    } else {
      // Registered as the diff keeps them: the covered range, and a point per row that steps add and remove.
      query.covered = diff.result.coveredRange();
      query.handles = this.host.register(this, query.queryId, [query.covered]);
      query.points = new Map();
      for (const row of diff.result.rows) this.registerPoint(query, row);
    }
    this.recheck(query, result);
  }

  /**
   * Moves a re-run query's registration from its last run's read ranges to this run's:
   * ranges in both keep their handles, only the others leave or enter the index. A
   * 500-row page that gained a row re-registers two ranges, not 1,002 (its 501 out and
   * in, per session, per commit). Range keys are made once per run's list, shared by
   * every session the run served.
   */
  private reregister(query: RunnableQuery, ranges: readonly KeyRange[]): void {
    if (ranges === query.readRanges) return;
    const before = rangeKeysOf(query.readRanges);
    const free = new Map<string, IntervalHandle[]>();
    before.forEach((key, at) => {
      const handles = free.get(key);
      if (handles === undefined) free.set(key, [query.handles[at]!]);
      else handles.push(query.handles[at]!);
    });
    const handles = rangeKeysOf(ranges).map((key, at) => free.get(key)?.pop() ?? this.host.register(this, query.queryId, [ranges[at]!])[0]!);
    for (const left of free.values()) this.host.unregister(left);
    query.handles = handles;
    query.readRanges = ranges;
  }

  /** Commits since the result's ts were matched before its ranges were in the index: any that touched them queues an item. */
  private recheck(query: SubscribedQuery, result: QueryResult): void {
    const now = this.host.currentTs;
    if (now > result.readTs && this.host.recent.changedSince(result.readTs, result.readRanges)) this.enqueueCommit(now, [query.queryId], []);
  }

  /**
   * A diff step taken: the query's state moves on, and its registration follows the rows
   * — a point removed per row that left, added per row that came, the covered range
   * replaced if it moved — rather than registered anew (a 500-row page changes by a row
   * or two a commit). Commits since the step's ts that touched a newly registered range
   * queue another item, as after a run.
   */
  private installStep(query: RunnableQuery, step: DiffStep): void {
    const { next, changes } = step;
    query.diff = next;
    query.hash = next.checksum;
    if (changes.length === 0) return;
    const added: KeyRange[] = [];
    for (const change of changes) {
      if (change.op === "edit") continue;
      if (change.op === "remove") {
        const handle = query.points!.get(change.before.id);
        if (handle !== undefined) this.host.unregister([handle]);
        query.points!.delete(change.before.id);
      } else {
        const point = this.registerPoint(query, change.after);
        if (point !== null) added.push(point);
      }
    }
    const covered = next.result.coveredRange();
    if (!sameRange(covered, query.covered!)) {
      this.host.unregister(query.handles);
      query.handles = this.host.register(this, query.queryId, [covered]);
      query.covered = covered;
      added.push(covered);
    }
    const now = this.host.currentTs;
    if (now > next.ts && added.length > 0 && this.host.recent.changedSince(next.ts, added)) this.enqueueCommit(now, [query.queryId], []);
  }

  private registerPoint(query: RunnableQuery, row: DiffRow): KeyRange | null {
    const point = query.diff!.result.rowPointOf(row);
    if (point === null) return null;
    query.points!.set(row.id, this.host.register(this, query.queryId, [point])[0]!);
    return point;
  }

  /** Takes every range of the query out of the subscription index. */
  private unregisterAll(query: SubscribedQuery): void {
    this.host.unregister(query.handles);
    query.handles = [];
    if (query.kind === "runnable") query.readRanges = [];
    if (query.kind !== "runnable" || query.points === null) return;
    this.host.unregister([...query.points.values()]);
    query.points = null;
    query.covered = null;
  }

  private sendTransition(ts: number, modifications: readonly string[], removed: readonly number[]): void {
    if (this.resyncPending) {
      this.removedUnsent(removed);
      return;
    }
    const startVersion = this.sentVersion;
    const endVersion = { querySet: this.querySet, ts };
    if (modifications.length === 0 && startVersion.querySet === endVersion.querySet && startVersion.ts === endVersion.ts) return;
    this.sentVersion = endVersion;
    const text = `{"type":"Transition","startVersion":${JSON.stringify(startVersion)},"endVersion":${JSON.stringify(endVersion)},"modifications":[${modifications.join(",")}]}`;
    this.outbox.droppable(text, { endVersion, removedQueryIds: removed });
  }

  // ---- outbound -----------------------------------------------------------------------

  private respond(message: ServerMessage): void {
    if (this.state === "closed") return;
    this.outbox.response(encodeMessage(message));
  }

  private dropped(handed: Version, removed: number[]): void {
    this.removedUnsent(removed);
    if (this.resyncPending || this.state === "closed") return;
    this.host.log(`session ${this.sessionId}: client is not reading; dropped its queued Transitions, it will be resynced from version ${handed.querySet}/${handed.ts}`);
    this.resyncPending = true;
    this.sentVersion = handed;
    this.work.push({ kind: "refresh" });
    this.pumpWork();
  }

  /** Closes the session once, with a log line saying why (the client reconnects and re-sends). */
  overloaded(why: string): void {
    if (this.state === "closed") return;
    this.host.log(`session ${this.sessionId}: closed: ${why}`);
    this.transport.terminate();
    this.close(`overloaded: ${why}`);
  }
}

function updatedText(queryId: number, result: QueryResult): string {
  if (result.diff) return `{"type":"QueryUpdated","queryId":${queryId},"value":${result.payloadText},"hash":"${result.hash}","rows":${result.diff.rowsField()}}`;
  return result.kind === "ok"
    ? `{"type":"QueryUpdated","queryId":${queryId},"value":${result.payloadText},"hash":"${result.hash}"}`
    : `{"type":"QueryFailed","queryId":${queryId},"error":${result.payloadText},"hash":"${result.hash}"}`;
}

function failedResult(error: unknown, ts: number): QueryResult {
  const payload = errorPayload(error);
  const payloadText = JSON.stringify(payload);
  return { kind: "failed", payloadText, hash: resultHash(`error:${payloadText}`), errorCode: payload.code, readRanges: [], readTs: ts };
}

/** Results shared by every query refused for the same limit: a refused query holds no text of its own. */
const OVER_QUERIES_LIMIT = failedResult(new CairnError("SESSION_LIMIT_EXCEEDED", `a session subscribes to at most ${SESSION_QUERIES_MAX} queries`), 0);
const OVER_ARGS_LIMIT = failedResult(
  new CairnError("SESSION_LIMIT_EXCEEDED", `the queries of a session have at most ${SESSION_QUERY_ARGS_BYTES_MAX} characters of arguments in all`),
  0,
);

function refusedQuery(queryId: number, result: QueryResult): RefusedQuery {
  return { kind: "refused", queryId, result, hash: null, handles: [] };
}

/** The error's stack, with its causes' (a wrapped bug keeps its origin). */
function stackOf(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  return cause === undefined ? text : `${text}\ncaused by: ${stackOf(cause)}`;
}

/** Each run's read ranges as strings, made once per list (the shared run hands one list to every session). */
const RANGE_KEYS = new WeakMap<readonly KeyRange[], readonly string[]>();

function rangeKeysOf(ranges: readonly KeyRange[]): readonly string[] {
  let keys = RANGE_KEYS.get(ranges);
  if (keys === undefined) {
    // Lengths first: key bytes may hold any byte, so no separator alone could tell two ranges apart.
    keys = ranges.map((range) => `${range.keyspace}\u0000${range.start.byteLength}:${latin1(range.start)}${range.end === null ? "-" : `${range.end.byteLength}:${latin1(range.end)}`}`);
    RANGE_KEYS.set(ranges, keys);
  }
  return keys;
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

function sameRange(a: KeyRange, b: KeyRange): boolean {
  const sameEnd = a.end === null || b.end === null ? a.end === b.end : compareBytes(a.end, b.end) === 0;
  return a.keyspace === b.keyspace && sameEnd && compareBytes(a.start, b.start) === 0;
}

function historyGone(result: QueryResult): boolean {
  return result.errorCode === "LOCAL_HISTORY_UNAVAILABLE";
}

function isTransient(error: unknown): boolean {
  const kind = errorKindOf(error);
  return kind === "Unavailable" || kind === "Conflict" || kind === "Fenced";
}

function requestIdOf(text: string): { requestId?: number } {
  const match = /"requestId"\s*:\s*(\d{1,15})/.exec(text.slice(0, 4096));
  return match === null ? {} : { requestId: Number(match[1]) };
}

function assertNever(value: never): never {
  throw new CairnError("INTERNAL", `unhandled ${JSON.stringify(value)}`);
}
