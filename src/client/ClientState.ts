import { CairnError, invalidArgument, ADMIN_KEY_CHARS_MAX, AUTH_TOKEN_CHARS_MAX, MESSAGE_BYTES_MAX, SESSION_REQUESTS_IN_FLIGHT_MAX } from "../base/index.js";
import type { Value } from "../model/Value.js";
import { decodeValue, type JsonValue } from "../model/ValueJson.js";
import { errorFromPayload, type LogEntry, type ServerMessage, type Version } from "../sync/protocol.js";
import { AdminKeyRequests } from "./AdminKeyRequests.js";
import { ANONYMOUS, equalIdentities, identityOfToken, UNKNOWN_IDENTITY, type AuthIdentity } from "./AuthIdentity.js";
import { AuthRequests, type AuthWaiter } from "./AuthRequests.js";
import { BroadcastTopics, checkTopic, type BroadcastListener, type BroadcastRegistration } from "./BroadcastTopics.js";
import { noEffects, type Effects } from "./Effects.js";
import type { EncodedArgs } from "./encodeArgs.js";
import { OptimisticUpdates, type OptimisticUpdate } from "./OptimisticUpdates.js";
import type { OutboxRecord } from "./OutboxRecord.js";
import { PendingActions } from "./PendingActions.js";
import { PendingMutations, resolution, type PendingMutation } from "./PendingMutations.js";
import { sameResult, type QueryResult } from "./QueryResult.js";
import { QuerySet, type QueryListener, type Subscription } from "./QuerySet.js";
import { settleDecoded } from "./settleDecoded.js";
import type { QueryToken } from "./QueryToken.js";
import { batchRestoredMutations, discardedUnsent, identityMismatch, restoredMutationFailed } from "./restoredMutations.js";
import { FRAME_OVERHEAD_BYTES, MUTATION_RESEND_BACKOFF_BASE_MS, MUTATION_RESEND_BACKOFF_MAX_MS, MUTATION_RESENDS_MAX } from "./limits.js";

/**
 * The client's side of the sync protocol, free of sockets: it takes plain server
 * messages and calls, and collects the frames to send and the callbacks to fire
 * (`takeEffects`). A driver (CairnClient) owns the socket and the reconnect timer.
 *
 * Its phase, per connection:
 *
 *   phase        event                 next
 *   disconnected connectionOpened      awaitingAck   (sends Connect)
 *   awaitingAck  ConnectAck            ready         (sends auth, topics, query set, mutations, actions)
 *   awaitingAck  connectionLost        disconnected
 *   ready        connectionLost        disconnected  (actions in flight reject with CONNECTION_LOST)
 *   any          close                 closed        (everything pending settles; terminal)
 *
 * Invariants:
 * - frames go out only while ready (Connect while awaitingAck); what is asked meanwhile
 *   is kept and sent after the next ConnectAck;
 * - at most SESSION_REQUESTS_IN_FLIGHT_MAX mutations and actions are on the wire at once
 *   (the server refuses more); the rest wait, in the order they were made, for answers;
 * - `version` is the server's version of this connection ({0, 0} at its start), moved
 *   only by a Transition that starts exactly at it; any other Transition asks for a resync;
 * - the visible results are the server results with the pending optimistic updates
 *   applied; a listener is called when its visible result changes, never before its
 *   query has one;
 * - a mutation's promise resolves only once `version.ts` covers its commit ts, so its
 *   write shows in the subscriptions when the caller sees the result;
 * - a mutation whose outcome the server could not tell (`outcomeUnknown`) is re-sent with
 *   the same seq after a backoff, up to MUTATION_RESENDS_MAX times, until the receipt
 *   answers: it is never rejected while it may be durable, unless those run out;
 * - with an outbox (`restoreOutbox`), a mutation is sent only after the driver reports
 *   the outbox holds it as it is (`mutationsSaved`); mutations restored from the outbox
 *   go out first, as MutationBatch frames, and their failures are reported (nobody
 *   awaits them);
 * - a mutation's `issuedAs` is the identity it is sent under, so a reload sends it as
 *   that identity and the server answers it from its receipt. It goes out only once the
 *   server answered the connection's SetAuth frames and the session runs as that identity
 *   (anonymous: no token; a user: a token of its iss and sub, accepted): a token the
 *   server refuses leaves the session anonymous, so the client waits for the AuthResponse
 *   rather than send after the SetAuth. One made anonymously and never sent is claimed by
 *   the session it first goes out in (the app signed in before it left: it is theirs),
 *   and with an outbox goes only once a save holding the new identity landed. Any other
 *   (issued as a user, or sent once) is never sent as another identity: while the app's
 *   auth (its last `setAuth`, anonymous before any) is another identity it waits for
 *   auth, reported once (OUTBOX_IDENTITY_MISMATCH) unless no `setAuth` was made yet; no
 *   later mutation overtakes it; `discardWaitingForAuth` drops it unsent (one of this
 *   session rejects). Made under a token the client cannot read (unknown), one of this
 *   session goes under such a token as before: the client cannot tell two apart;
 * - a call or subscription whose frame would exceed MESSAGE_BYTES_MAX fails at once with
 *   MESSAGE_TOO_LARGE and leaves nothing behind (no optimistic update, nothing queued):
 *   the server would close the connection on it, and the client re-send it forever.
 */

type Phase = "disconnected" | "awaitingAck" | "ready" | "closed";

export interface ClientStateOptions {
  /** The client's id for mutation receipts (stable across reconnects). */
  readonly clientId: string;
  /** Where errors nobody awaits go (a ProtocolError without a request, a throwing update …); called from callbacks only. */
  readonly reportError: (error: unknown) => void;
  /**
   * The session's token is gone: it expired (AuthExpired), or the server refused it when
   * re-sent after a reconnect. Default: reported like any error. A token fetcher takes it
   * to fetch a fresh token. Called from callbacks only.
   */
  readonly onAuthLost?: (error: CairnError) => void;
}

export interface OptimisticCall {
  readonly update: OptimisticUpdate<any>;
  readonly args: unknown;
}

/** Gets each batch of the node's function log entries, and how many this session missed so far. */
export type LogListener = (entries: readonly LogEntry[], dropped: number) => void;

export class ClientState {
  private readonly reportError: (error: unknown) => void;
  private readonly onAuthLost: (error: CairnError) => void;
  private phase: Phase = "disconnected";
  private version: Version = { querySet: 0, ts: 0 };
  /** The current connection's session id (null: none open). */
  private sessionId: string | null = null;
  /** The last session lost and the ts its results showed: Connect's `resume` (issue 30). */
  private lostSession: { readonly sessionId: string; readonly sinceTs: number } | null = null;
  private maxObservedTs = 0;
  private nextRequestId = 1;
  private readonly queries = new QuerySet();
  private readonly optimistic = new OptimisticUpdates();
  private readonly mutations: PendingMutations;
  private readonly actions = new PendingActions();
  private readonly auth = new AuthRequests();
  private readonly adminKey = new AdminKeyRequests();
  /** Listeners of the node's function logs (an admin's; SubscribeLogs while there are any). */
  private readonly logListeners = new Set<LogListener>();
  private readonly topics = new BroadcastTopics();
  private visible = new Map<QueryToken, QueryResult>();
  private outbox: Effects = noEffects();
  /** Mutations wait for the outbox to hold them before they are sent. */
  private durable = false;
  /** The identity of the token the app set last (refused or expired ones included); null: it never called setAuth (anonymous). */
  private chosenIdentity: AuthIdentity | null = null;
  /** The subject the server verified in its last accepted AuthResponse since the last SetAuth and connection (null: none). */
  private confirmedSubject: string | null = null;

  constructor(options: ClientStateOptions) {
    this.reportError = options.reportError;
    this.onAuthLost = options.onAuthLost ?? options.reportError;
    this.mutations = new PendingMutations(options.clientId);
  }

  /** The effects collected since the last call. */
  takeEffects(): Effects {
    const effects = this.outbox;
    this.outbox = noEffects();
    return effects;
  }

  get isClosed(): boolean {
    return this.phase === "closed";
  }

  /** The client's id for mutation receipts (an outbox's, once restored). */
  get clientId(): string {
    return this.mutations.receiptClientId;
  }

  // ---- outbox --------------------------------------------------------------------------

  /**
   * Starts using an outbox (before the first connection and the first mutation): takes
   * its client id, numbering and unanswered mutations (`record`, null for an empty
   * outbox), and from now on sends a mutation only once `mutationsSaved` covers it.
   */
  restoreOutbox(record: OutboxRecord | null): void {
    this.durable = true;
    if (record === null) return;
    this.mutations.restore(record, (mutation) => ({
      requestId: this.nextRequestId++,
      resolve: () => undefined,
      reject: (error) => this.reportError(restoredMutationFailed(mutation, error)),
    }));
    this.sendWaitingRequests();
  }

  /**
   * Removes the mutations waiting for auth that `chosen` picks, unsent (the outbox drops
   * them at its next save); returns them. Nobody awaits a restored one; one of this
   * session rejects (OUTBOX_IDENTITY_MISMATCH, `details.discarded`).
   */
  discardWaitingForAuth(chosen: (mutation: PendingMutation) => boolean): readonly PendingMutation[] {
    if (this.phase === "closed") return [];
    const discarded = this.mutations.discardWaitingForAuth(chosen);
    let updatesDropped = false;
    for (const mutation of discarded) {
      if (mutation.restored) continue;
      updatesDropped = this.optimistic.drop(mutation.requestId) || updatesDropped;
      this.outbox.callbacks.push(() => mutation.reject(discardedUnsent(mutation)));
    }
    if (updatesDropped) this.refreshVisible();
    if (discarded.length > 0) this.sendWaitingRequests();
    return discarded;
  }

  /** Changes whenever a mutation is added, answered or settled: save `outboxRecord()` then. */
  get mutationsRevision(): number {
    return this.mutations.revision;
  }

  outboxRecord(): OutboxRecord {
    return this.mutations.record();
  }

  /** The outbox holds `saved` durably (a record `outboxRecord` gave): send the mutations that waited for it. */
  mutationsSaved(saved: OutboxRecord): void {
    if (this.phase === "closed") return;
    if (this.mutations.saved(saved)) this.sendWaitingRequests();
  }

  /** Mutations whose promise has not settled, in seq order (restored ones included). */
  pendingMutations(): readonly PendingMutation[] {
    return this.mutations.all();
  }

  // ---- connection ----------------------------------------------------------------------

  connectionOpened(sessionId: string): void {
    if (this.phase === "closed") return;
    this.phase = "awaitingAck";
    this.version = { querySet: 0, ts: 0 };
    const resume = this.lostSession;
    this.lostSession = null;
    this.sessionId = sessionId;
    this.outbox.send.push({
      type: "Connect",
      sessionId,
      clientId: this.clientId,
      held: this.mutations.held(),
      ackedThrough: this.mutations.ackedThrough(),
      maxObservedTs: this.maxObservedTs,
      diffs: true,
      ...(resume === null ? {} : { resume }),
    });
  }

  connectionLost(): void {
    if (this.phase === "closed") return;
    // The session just lost, if it showed results: the next one asks the node to resume it.
    this.lostSession = this.phase === "ready" && this.sessionId !== null && this.version.ts > 0 ? { sessionId: this.sessionId, sinceTs: this.version.ts } : null;
    this.sessionId = null;
    this.phase = "disconnected";
    this.version = { querySet: 0, ts: 0 };
    this.mutations.connectionLost();
    this.auth.connectionLost();
    this.adminKey.connectionLost();
    this.confirmedSubject = null;
    this.holdForAuth();
    for (const action of this.actions.takeInFlight()) {
      this.outbox.callbacks.push(() => action.reject(connectionLost("the connection dropped before the action's answer")));
    }
  }

  /** Stops for good: waiting calls reject with CONNECTION_LOST (committed mutations resolve). */
  close(): void {
    if (this.phase === "closed") return;
    this.phase = "closed";
    const error = connectionLost("the client was closed");
    for (const mutation of this.mutations.takeAll()) {
      // A restored mutation stays in the outbox for the next client: nothing to report.
      if (mutation.restored && mutation.status.state !== "committed") continue;
      this.outbox.callbacks.push(mutation.status.state === "committed" ? resolution(mutation) : () => mutation.reject(error));
    }
    for (const action of this.actions.takeAll()) this.outbox.callbacks.push(() => action.reject(error));
    for (const waiter of this.auth.takeAll()) this.outbox.callbacks.push(() => waiter.reject(error));
    for (const waiter of this.adminKey.takeAll()) this.outbox.callbacks.push(() => waiter.reject(error));
    this.logListeners.clear();
  }

  receive(message: ServerMessage): void {
    if (this.phase === "closed") return;
    switch (message.type) {
      case "ConnectAck":
        return this.onConnectAck(message);
      case "Transition":
        return this.onTransition(message);
      case "MutationResponse":
        return this.onMutationResponse(message);
      case "ActionResponse":
        return this.onActionResponse(message);
      case "AuthResponse":
        return this.onAuthResponse(message);
      case "AuthExpired":
        // The server's session is anonymous now: forget the token rather than re-send it.
        this.auth.forget();
        this.authLost(errorFromPayload(message.error));
        return this.sendWaitingRequests();
      case "Broadcast":
        return this.onBroadcast(message);
      case "AdminAuthResponse":
        return this.onAdminAuthResponse(message);
      case "LogEntries":
        for (const listener of this.logListeners) this.outbox.callbacks.push(() => listener(message.entries as LogEntry[], message.dropped));
        return;
      case "ProtocolError":
        return this.onProtocolError(message);
      case "FatalError":
        this.report(errorFromPayload(message.error));
        this.outbox.resync = `the server ended the session: ${message.error.message}`;
        return;
      default:
        return unreachable(message);
    }
  }

  // ---- queries -------------------------------------------------------------------------

  /** Adds a listener. Its query's current result, if any, reaches it through the next `notifyListeners`. */
  subscribe(path: string, args: EncodedArgs, listener: QueryListener): Subscription {
    if (this.phase === "closed") throw connectionLost("the client is closed");
    checkFrameSize("subscription", path, args);
    const { subscription, added } = this.queries.add(path, args, listener);
    if (added !== null && this.phase === "ready") this.outbox.send.push(this.queries.modify([added], []));
    return subscription;
  }

  unsubscribe(subscription: Subscription): void {
    const removed = this.queries.remove(subscription);
    if (removed === null) return;
    this.visible.delete(removed.token);
    if (this.phase === "ready") this.outbox.send.push(this.queries.modify([], [removed]));
  }

  /** Calls every listener whose visible result differs from what it last saw. */
  notifyListeners(): void {
    for (const query of this.queries.queries()) {
      const result = this.visible.get(query.token);
      if (result === undefined) continue;
      for (const subscription of query.subscriptions) {
        if (sameResult(subscription.lastSeen, result)) continue;
        subscription.lastSeen = result;
        this.outbox.callbacks.push(() => deliver(subscription, result));
      }
    }
  }

  // ---- mutations, actions --------------------------------------------------------------

  mutate(path: string, args: EncodedArgs, optimistic?: OptimisticCall): Promise<Value> {
    if (this.phase === "closed") return Promise.reject(connectionLost("the client is closed"));
    try {
      checkFrameSize("mutation", path, args);
    } catch (error) {
      return Promise.reject(error);
    }
    const requestId = this.nextRequestId++;
    const promise = this.mutations.create(requestId, path, args.json, this.durable, this.chosenIdentity ?? ANONYMOUS);
    if (optimistic !== undefined) {
      this.optimistic.add(requestId, optimistic.update, optimistic.args);
      this.refreshVisible();
    }
    this.sendWaitingRequests();
    return promise;
  }

  act(path: string, args: EncodedArgs): Promise<Value> {
    if (this.phase === "closed") return Promise.reject(connectionLost("the client is closed"));
    try {
      checkFrameSize("action", path, args);
    } catch (error) {
      return Promise.reject(error);
    }
    const promise = this.actions.create(this.nextRequestId++, path, args.json);
    this.sendWaitingRequests();
    return promise;
  }

  // ---- auth, broadcasts ----------------------------------------------------------------

  /** Sets the token for this and every later connection; resolves with the verified subject. */
  setAuth(token: string | null): Promise<string | null> {
    if (this.phase === "closed") return Promise.reject(connectionLost("the client is closed"));
    if (token !== null && (token.length === 0 || token.length > AUTH_TOKEN_CHARS_MAX)) {
      return Promise.reject(invalidArgument(`a token is 1 to ${AUTH_TOKEN_CHARS_MAX} characters`, { tokenCharsMax: AUTH_TOKEN_CHARS_MAX }));
    }
    this.chosenIdentity = identityOfToken(token);
    this.confirmedSubject = null;
    const promise = new Promise<string | null>((resolve, reject) => {
      const frame = this.auth.set(token, { resolve, reject }, this.phase === "ready");
      if (frame !== null) this.outbox.send.push(frame);
    });
    this.sendWaitingRequests();
    return promise;
  }

  /** Sends an event to a topic's listeners; dropped while disconnected (fire and forget). */
  publish(topic: string, event: JsonValue): void {
    checkTopic(topic);
    if (this.phase === "ready") this.outbox.send.push({ type: "Publish", topic, event });
  }

  /** Makes this and every later session an admin's (null: no longer); resolves once the server accepted the key. */
  setAdminKey(key: string | null): Promise<void> {
    if (this.phase === "closed") return Promise.reject(connectionLost("the client is closed"));
    if (key !== null && (key.length === 0 || key.length > ADMIN_KEY_CHARS_MAX)) {
      return Promise.reject(invalidArgument(`an admin key is 1 to ${ADMIN_KEY_CHARS_MAX} characters`, { adminKeyCharsMax: ADMIN_KEY_CHARS_MAX }));
    }
    return new Promise<void>((resolve, reject) => {
      const frame = this.adminKey.set(key, { resolve, reject }, this.phase === "ready");
      if (frame !== null) this.outbox.send.push(frame);
    });
  }

  /** Follows the node's function logs (an admin session's); `listener` gets each LogEntries frame. */
  addLogListener(listener: LogListener): void {
    if (this.phase === "closed") throw connectionLost("the client is closed");
    this.logListeners.add(listener);
    if (this.logListeners.size === 1 && this.phase === "ready") this.outbox.send.push({ type: "SubscribeLogs" });
  }

  removeLogListener(listener: LogListener): void {
    if (!this.logListeners.delete(listener)) return;
    if (this.logListeners.size === 0 && this.phase === "ready") this.outbox.send.push({ type: "UnsubscribeLogs" });
  }

  addBroadcastListener(topic: string, listener: BroadcastListener): BroadcastRegistration {
    if (this.phase === "closed") throw connectionLost("the client is closed");
    const { registration, first } = this.topics.add(topic, listener);
    if (first && this.phase === "ready") this.outbox.send.push({ type: "ModifyTopics", add: [topic], remove: [] });
    return registration;
  }

  removeBroadcastListener(registration: BroadcastRegistration): void {
    const last = this.topics.remove(registration);
    if (last && this.phase === "ready") this.outbox.send.push({ type: "ModifyTopics", add: [], remove: [registration.topic] });
  }

  // ---- server messages -----------------------------------------------------------------

  private onConnectAck(ack: Extract<ServerMessage, { type: "ConnectAck" }>): void {
    if (this.phase !== "awaitingAck") {
      this.outbox.resync = "a ConnectAck arrived that answers no Connect";
      return;
    }
    this.phase = "ready";
    this.observe(ack.ts);
    const results = new Map(ack.results.map((result) => [result.seq, result]));
    for (const seq of ack.known) {
      const result = results.get(seq);
      // A known seq without its result is re-sent: the server answers it from the receipt.
      if (result === undefined) continue;
      this.observe(result.ts);
      this.mutations.commitKnown(seq, result.ts, result.value);
    }
    this.resendSession();
  }

  /** A new connection's session, in order: auth, topics, query set, then the requests waiting. */
  private resendSession(): void {
    const auth = this.auth.resend();
    if (auth.frame !== null) this.outbox.send.push(auth.frame);
    for (const waiter of auth.answeredWithout) this.outbox.callbacks.push(() => waiter.resolve(null));
    const admin = this.adminKey.resend();
    if (admin.frame !== null) this.outbox.send.push(admin.frame);
    for (const waiter of admin.answeredWithout) this.outbox.callbacks.push(() => waiter.resolve());
    if (this.logListeners.size > 0) this.outbox.send.push({ type: "SubscribeLogs" });
    const topics = this.topics.topics();
    if (topics.length > 0) this.outbox.send.push({ type: "ModifyTopics", add: topics, remove: [] });
    // Sent even when empty: its Transition brings the ts that settles the ConnectAck's known mutations.
    this.outbox.send.push(...this.queries.resubscribeAll());
    this.sendWaitingRequests();
  }

  private onTransition(transition: Extract<ServerMessage, { type: "Transition" }>): void {
    const { startVersion, endVersion } = transition;
    if (this.phase !== "ready" || !sameVersion(startVersion, this.version)) {
      this.outbox.resync = `a Transition from ${formatVersion(startVersion)} does not start at the client's ${formatVersion(this.version)}`;
      return;
    }
    for (const query of this.queries.apply(transition.modifications)) this.outbox.send.push({ type: "ResetQuery", queryId: query.queryId });
    this.version = endVersion;
    this.observe(endVersion.ts);
    this.settleCovered(true);
  }

  private onMutationResponse(response: Extract<ServerMessage, { type: "MutationResponse" }>): void {
    if (response.ts !== undefined) this.observe(response.ts);
    const mutation = this.mutations.get(response.requestId);
    if (mutation === undefined || mutation.status.state !== "inFlight") return;
    if (response.success) {
      this.mutations.commit(mutation, response.ts, response.value);
      this.settleCovered(false);
    } else {
      const error = errorFromPayload(response.error);
      if (outcomeUnknown(error) && mutation.resends < MUTATION_RESENDS_MAX) this.backOff(mutation);
      // Below the floor, a restored mutation was acknowledged before the reload (its removal from the outbox had not landed): it was applied.
      else if (mutation.restored && error.code === "MUTATION_SEQ_BELOW_FLOOR") this.mutations.remove(mutation);
      else this.fail(mutation, error);
    }
    this.sendWaitingRequests();
  }

  /** Re-sends the mutations whose backoff after an unknown outcome elapsed (the driver's timer calls it). */
  resendBackedOff(): void {
    if (this.phase === "closed") return;
    if (this.mutations.resendBackedOff()) this.sendWaitingRequests();
  }

  private backOff(mutation: PendingMutation): void {
    this.mutations.backOff(mutation);
    const delayMs = Math.min(MUTATION_RESEND_BACKOFF_MAX_MS, MUTATION_RESEND_BACKOFF_BASE_MS * 2 ** (mutation.resends - 1));
    this.outbox.resendAfterMs = Math.min(this.outbox.resendAfterMs ?? delayMs, delayMs);
  }

  private onActionResponse(response: Extract<ServerMessage, { type: "ActionResponse" }>): void {
    const action = this.actions.take(response.requestId);
    if (action === undefined) return;
    this.sendWaitingRequests();
    if (!response.success) {
      const error = errorFromPayload(response.error);
      this.outbox.callbacks.push(() => action.reject(error));
      return;
    }
    const { value } = response;
    this.outbox.callbacks.push(() => settleDecoded(value, action.resolve, action.reject));
  }

  private onAuthResponse(response: Extract<ServerMessage, { type: "AuthResponse" }>): void {
    const waiters: readonly AuthWaiter[] = this.auth.answered(response.success);
    if (response.success) {
      this.confirmedSubject = response.subject;
      for (const waiter of waiters) this.outbox.callbacks.push(() => waiter.resolve(response.subject));
    } else {
      const error = response.error !== undefined ? errorFromPayload(response.error) : new CairnError("UNAUTHENTICATED", "the server refused the token");
      // A token re-sent after a reconnect has nobody waiting: its refusal is the token lost.
      if (waiters.length === 0) this.authLost(error);
      for (const waiter of waiters) this.outbox.callbacks.push(() => waiter.reject(error));
    }
    // The session's identity may be settled now: restored mutations of it may go.
    this.sendWaitingRequests();
  }

  private onAdminAuthResponse(response: Extract<ServerMessage, { type: "AdminAuthResponse" }>): void {
    const waiters = this.adminKey.answered(response.success);
    if (response.success) {
      for (const waiter of waiters) this.outbox.callbacks.push(() => waiter.resolve());
      return;
    }
    const error = response.error !== undefined ? errorFromPayload(response.error) : new CairnError("FORBIDDEN", "the admin key was refused");
    if (waiters.length === 0) this.report(error);
    for (const waiter of waiters) this.outbox.callbacks.push(() => waiter.reject(error));
  }

  private onBroadcast(broadcast: Extract<ServerMessage, { type: "Broadcast" }>): void {
    let event: Value;
    try {
      event = decodeValue(broadcast.event);
    } catch (error) {
      this.report(error);
      return;
    }
    for (const registration of this.topics.listenersOf(broadcast.topic)) {
      this.outbox.callbacks.push(() => {
        if (registration.active) registration.listener(event);
      });
    }
  }

  private onProtocolError(message: Extract<ServerMessage, { type: "ProtocolError" }>): void {
    const error = errorFromPayload(message.error);
    if (message.requestId === undefined) return this.report(error);
    const mutation = this.mutations.get(message.requestId);
    const action = this.actions.take(message.requestId);
    if (mutation !== undefined && mutation.status.state !== "committed") this.fail(mutation, error);
    else if (action !== undefined) this.outbox.callbacks.push(() => action.reject(error));
    else return this.report(error);
    this.sendWaitingRequests();
  }

  // ---- helpers -------------------------------------------------------------------------

  /** Sends waiting mutations and actions in the order they were made, within the in-flight bound. */
  private sendWaitingRequests(): void {
    this.holdForAuth();
    if (this.phase !== "ready") return;
    const session = this.sessionIdentity();
    // A mutation made anonymously goes as the app's auth, never in a session whose token
    // expired or was refused meanwhile; claimed, it is saved so before it goes (`saving` again).
    const claimant = session !== null && equalIdentities(session, this.chosenIdentity ?? ANONYMOUS) ? session : null;
    this.mutations.claim(claimant, this.durable);
    const budget = SESSION_REQUESTS_IN_FLIGHT_MAX - this.mutations.inFlightCount() - this.actions.inFlightCount();
    if (budget <= 0) return;
    const waiting = [
      ...this.mutations.sendable(session, claimant).map((mutation) => ({ requestId: mutation.requestId, send: () => this.mutations.send(mutation) })),
      ...this.actions.waiting().map((action) => ({ requestId: action.requestId, send: () => this.actions.send(action) })),
    ];
    waiting.sort((left, right) => left.requestId - right.requestId);
    const frames = waiting.slice(0, budget).map((request) => request.send());
    this.outbox.send.push(...batchRestoredMutations(frames, (requestId) => this.mutations.get(requestId)?.restored === true));
  }

  /**
   * Mutations wait for auth while the app's auth is not an identity they may go as; those
   * issued as another identity than one the app set (or as an unknown one) are reported, once.
   */
  private holdForAuth(): void {
    const chosen = this.chosenIdentity;
    this.mutations.matchAuth(chosen ?? ANONYMOUS);
    const mismatched = this.mutations.takeUnreportedMismatches((mutation) => chosen !== null || mutation.issuedAs.kind === "unknown");
    if (mismatched.length > 0) this.report(identityMismatch(mismatched, chosen ?? ANONYMOUS));
  }

  /**
   * The identity this connection's session runs as, once the server answered every
   * SetAuth sent on it (null: not ready, or an answer outstanding).
   */
  private sessionIdentity(): AuthIdentity | null {
    if (this.phase !== "ready" || !this.auth.settled) return null;
    const token = this.auth.credential;
    if (token === null) return ANONYMOUS;
    const identity = identityOfToken(token);
    // The server names the subject it verified: a token it reads otherwise than the client matches nothing.
    return identity.kind === "user" && identity.subject === this.confirmedSubject ? identity : UNKNOWN_IDENTITY;
  }

  /**
   * Resolves the mutations the version now covers, dropping their optimistic updates,
   * and tells listeners first: a caller whose promise resolves sees its write already.
   */
  private settleCovered(serverResultsChanged: boolean): void {
    const covered = this.mutations.takeCovered(this.version.ts);
    let updatesDropped = false;
    for (const mutation of covered) updatesDropped = this.optimistic.drop(mutation.requestId) || updatesDropped;
    if (serverResultsChanged || updatesDropped) this.refreshVisible();
    for (const mutation of covered) this.outbox.callbacks.push(resolution(mutation));
  }

  private fail(mutation: PendingMutation, error: CairnError): void {
    this.mutations.remove(mutation);
    if (this.optimistic.drop(mutation.requestId)) this.refreshVisible();
    this.outbox.callbacks.push(() => mutation.reject(error));
  }

  /** Recomputes the visible results from the server results and the pending updates, and notifies. */
  private refreshVisible(): void {
    const server = this.queries.serverResults();
    this.visible = this.optimistic.size === 0 ? server : this.optimistic.layer(server, (error) => this.report(error));
    this.notifyListeners();
  }

  private observe(ts: number): void {
    this.maxObservedTs = Math.max(this.maxObservedTs, ts);
  }

  private report(error: unknown): void {
    this.outbox.callbacks.push(() => this.reportError(error));
  }

  private authLost(error: CairnError): void {
    this.outbox.callbacks.push(() => this.onAuthLost(error));
  }
}

function deliver(subscription: Subscription, result: QueryResult): void {
  // An earlier callback of the same batch may have unsubscribed it.
  if (!subscription.active) return;
  if (result.kind === "value") subscription.listener.onUpdate(result.value);
  else subscription.listener.onError(result.error);
}

/**
 * Whether a failed mutation may have committed: the engine failed mid-commit
 * (ENGINE_POISONED), a forward's answer was lost (WRITER_UNAVAILABLE saying so), or it
 * committed but is not visible here yet (REPLICA_BEHIND with `committed`). Re-sending it
 * with the same (clientId, seq) is answered from its receipt if it did. A batch entry
 * not run at all (MUTATION_NOT_RUN) is re-sent the same way.
 */
function outcomeUnknown(error: CairnError): boolean {
  switch (error.code) {
    case "ENGINE_POISONED":
      return true;
    // Not run at all (an earlier entry of its batch failed transiently): re-sending is safe.
    case "MUTATION_NOT_RUN":
      return true;
    case "WRITER_UNAVAILABLE":
      return error.details.outcomeUnknown === true;
    case "REPLICA_BEHIND":
      return error.details.committed === true;
    default:
      return false;
  }
}

/** MESSAGE_TOO_LARGE if a frame carrying `args` and `path` could exceed MESSAGE_BYTES_MAX (bytes of UTF-8). */
function checkFrameSize(what: string, path: string, args: EncodedArgs): void {
  // Most arguments are far below the bound even at 3 bytes per UTF-16 unit: no count needed.
  if ((args.text.length + path.length) * 3 + FRAME_OVERHEAD_BYTES <= MESSAGE_BYTES_MAX) return;
  const bytes = utf8Bytes(args.text) + utf8Bytes(path) + FRAME_OVERHEAD_BYTES;
  if (bytes <= MESSAGE_BYTES_MAX) return;
  throw new CairnError("MESSAGE_TOO_LARGE", `the ${what} ${path} has ${bytes - FRAME_OVERHEAD_BYTES} bytes of arguments and path; a frame holds at most ${MESSAGE_BYTES_MAX} bytes`, {
    details: { path, bytes, messageBytesMax: MESSAGE_BYTES_MAX },
  });
}

/** The UTF-8 length of `text` without encoding it (a lone surrogate counts 3, as its replacement character). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let at = 0; at < text.length; at++) {
    const unit = text.charCodeAt(at);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && at + 1 < text.length && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      at++;
    } else bytes += 3;
  }
  return bytes;
}

function connectionLost(message: string): CairnError {
  return new CairnError("CONNECTION_LOST", message);
}

function sameVersion(left: Version, right: Version): boolean {
  return left.querySet === right.querySet && left.ts === right.ts;
}

function formatVersion(version: Version): string {
  return `{querySet: ${version.querySet}, ts: ${version.ts}}`;
}

function unreachable(value: never): never {
  throw new CairnError("INTERNAL", `unhandled server message ${JSON.stringify(value)}`);
}
