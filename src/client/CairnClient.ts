import { CairnError, invalidArgument } from "../base/index.js";
import type { Value } from "../model/Value.js";
import { encodeValue } from "../model/ValueJson.js";
import { encodeMessage, parseServerMessage, type ClientMessage } from "../sync/protocol.js";
import type { ActionReference, ArgsOf, ArgsParameter, MutationReference, QueryReference, ResultOf } from "./api.js";
import { ClientState, type LogListener } from "./ClientState.js";
import {
  initialConnectionState,
  nextConnectionState,
  reconnectDelayMs,
  type ConnectionEvent,
  type ConnectionState,
} from "./ConnectionLifecycle.js";
import type { Effects } from "./Effects.js";
import { encodeArgs } from "./encodeArgs.js";
import { CLIENT_ID_BYTES } from "./limits.js";
import { MutationOutbox } from "./MutationOutbox.js";
import type { OutboxStore } from "./OutboxStore.js";
import { pendingMutationView, type PendingMutationView } from "./PendingMutationView.js";
import { NodeUrls } from "./NodeUrls.js";
import type { OptimisticUpdate } from "./OptimisticUpdates.js";
import { cryptoRandom, randomHex, type Random } from "./Random.js";
import { globalTimers, type Timers } from "./Timers.js";
import { TokenRefresher, type TokenFetcher } from "./TokenRefresher.js";
import { CLIENT_CLOSE_CODES, type WebSocketConstructor, type WebSocketLike } from "./WebSocketLike.js";

/**
 * The Cairn client: one WebSocket at a time to one of the nodes it was given, driving a
 * ClientState (which holds every protocol decision) and reconnecting by itself with
 * jittered exponential backoff (ConnectionLifecycle), each attempt to the next URL of its
 * list (NodeUrls). Subscriptions, unanswered mutations, the auth token and broadcast
 * topics survive reconnects, to the same node or another; actions in flight do not
 * (CONNECTION_LOST). Another node never shows an older state than one the client saw:
 * every Connect carries the highest ts the client observed, which the node waits for
 * (or ends the session with REPLICA_BEHIND, and the client moves on).
 *
 * Listeners and promise settlements run after the frames of the same step are sent;
 * a listener that throws is reported through `onError` and does not stop the others.
 */

export interface CairnClientOptions {
  /** The WebSocket class. Default: `globalThis.WebSocket` (browsers); in Node use `createNodeClient` of client/node. */
  readonly WebSocket?: WebSocketConstructor;
  /** Ids and reconnect jitter. Default: `globalThis.crypto.getRandomValues`. */
  readonly random?: Random;
  /** The reconnect timer. Default: the global setTimeout. */
  readonly timers?: Timers;
  /** Errors nobody awaits (a refused re-sent token, a ProtocolError without a request, a throwing listener). Default: console.warn. */
  readonly onError?: (error: unknown) => void;
  /** First reconnect delay before jitter (RECONNECT_BACKOFF_BASE_MS, 300 ms); smaller reconnects faster after a blip but loads a restarting server more. */
  readonly reconnectBackoffBaseMs?: number;
  /** Reconnect delay ceiling before jitter (RECONNECT_BACKOFF_MAX_MS, 30 s). */
  readonly reconnectBackoffMaxMs?: number;
  /**
   * Where unanswered mutations persist across reloads and crashes (`indexedDbOutbox` in
   * browsers, `fileOutbox` of client/node): each is written there before it is sent, and
   * a later client over the same outbox re-sends them with the same (clientId, seq), so
   * each is applied once. The client connects once the outbox is read; mutations made
   * before wait for it. A problem with it (locked, unreadable) is reported through
   * `onError`. Default: none (unanswered mutations end with the page or process).
   *
   * Each mutation is stored with the identity it is sent under (anonymous, or the `iss`
   * and `sub` of the token set then; one made anonymously and not sent yet becomes the
   * identity of the session it first goes out in, saved before it goes), and a restored
   * one is sent only once the server accepted a token of that identity (anonymous: while
   * no token is set): never as another user. While the client's auth is another identity
   * it shows as `waitingForAuth`, and later mutations wait behind it, as does one made
   * as a user before the app signed out or in as another; see `discardPendingMutations`.
   */
  readonly outbox?: OutboxStore;
}

/** A mutation to call later, optionally with an optimistic update. */
export interface MutationFunction<Ref extends MutationReference> {
  (...args: ArgsParameter<Ref>): Promise<ResultOf<Ref>>;
  /** The same mutation, applying `update` to the local query results until it commits (or fails). */
  withOptimisticUpdate(update: OptimisticUpdate<ArgsOf<Ref>>): MutationFunction<Ref>;
}

export type ConnectionListener = (state: ConnectionState) => void;
export type PendingMutationsListener = (mutations: readonly PendingMutationView[]) => void;

export class CairnClient {
  private readonly urls: NodeUrls;
  private readonly WebSocketClass: WebSocketConstructor;
  private readonly random: Random;
  private readonly timers: Timers;
  private readonly onError: (error: unknown) => void;
  private readonly backoff: { readonly baseMs?: number; readonly maxMs?: number };
  private readonly state: ClientState;
  private connection: ConnectionState;
  private socket: WebSocketLike | null = null;
  private retryTimer: unknown = null;
  /** The timer that re-sends mutations backing off after an unknown outcome (null: none set). */
  private resendTimer: unknown = null;
  private readonly connectionListeners = new Set<ConnectionListener>();
  /** Rejecters of one-shot queries still waiting, for `close`. */
  private readonly waitingQueries = new Set<(error: CairnError) => void>();
  /** Keeps the session's token fresh when `setAuth` was given a fetcher (null: a fixed token, or none). */
  private tokenRefresher: TokenRefresher | null = null;
  /** The outbox, while the client uses one (null: none, it could not be used, or the client closed). */
  private outbox: MutationOutbox | null = null;
  /** Settles once the outbox is read; mutations wait for it (null: nothing to wait for). */
  private outboxLoading: Promise<void> | null = null;
  private outboxClosed: Promise<void> = Promise.resolve();
  private seenMutationsRevision = 0;
  private readonly pendingListeners = new Set<PendingMutationsListener>();

  /**
   * `urls`: the sync endpoint (`wss://host/api/sync`) of one node, or of a load balancer
   * in front of several, or a list of the nodes' endpoints: the client connects to one at
   * a time, starting from one drawn at random, and moves to the next on any failure.
   * INVALID_ARGUMENT for an empty list, a URL that is not ws:// or wss://, or one listed twice.
   */
  constructor(urls: string | readonly string[], options: CairnClientOptions = {}) {
    const random = options.random ?? cryptoRandom;
    this.urls = new NodeUrls(urls, random);
    this.connection = initialConnectionState(this.urls.current);
    this.WebSocketClass = options.WebSocket ?? defaultWebSocket();
    this.random = random;
    this.timers = options.timers ?? globalTimers;
    this.onError = options.onError ?? warn;
    this.backoff = { baseMs: options.reconnectBackoffBaseMs, maxMs: options.reconnectBackoffMaxMs };
    this.state = new ClientState({
      clientId: randomHex(this.random, CLIENT_ID_BYTES),
      reportError: (error) => this.report(error),
      onAuthLost: (error) => (this.tokenRefresher !== null ? this.tokenRefresher.tokenLost() : this.report(error)),
    });
    if (options.outbox === undefined) this.openSocket(this.urls.current);
    else this.outboxLoading = this.restoreOutbox(options.outbox);
  }

  /** Reads the outbox, restores its mutations, then connects (the Connect carries the outbox's client id). */
  private async restoreOutbox(store: OutboxStore): Promise<void> {
    const outbox = new MutationOutbox(store, this.timers, (error) => this.report(error), (saved) => this.step(() => this.state.mutationsSaved(saved)));
    this.outbox = outbox;
    const loaded = await outbox.load();
    this.outboxLoading = null;
    if (this.connection.state === "closed") return;
    if (loaded.usable) this.step(() => this.state.restoreOutbox(loaded.record));
    else this.outbox = null;
    this.openSocket(this.urls.current);
  }

  /** This client's id: the receipt key of its mutations, stable across reconnects (with an outbox, its id once read). */
  get clientId(): string {
    return this.state.clientId;
  }

  /** Whether the client is connected, and to which of its URLs (`url`; while waiting to reconnect, the one it tries next). */
  get connectionState(): ConnectionState {
    return this.connection;
  }

  /** The URLs the client connects to, as given. */
  get nodeUrls(): readonly string[] {
    return this.urls.urls;
  }

  /**
   * The mutations not settled yet, in the order they were made: those of this client and
   * those restored from the outbox after a reload (`restored`), for a UI to show as
   * pending. A mutation leaves the list when its result is visible, or when it fails.
   */
  pendingMutations(): readonly PendingMutationView[] {
    return this.state.pendingMutations().map(pendingMutationView);
  }

  /**
   * Drops the mutations that wait for auth (state `waitingForAuth`: issued under another
   * identity than the client's auth, reported as OUTBOX_IDENTITY_MISMATCH) and that
   * `filter` picks (default: all of them), unsent. Resolves with them once the outbox no
   * longer holds them (rejects with OUTBOX_UNAVAILABLE if the client closes first). A
   * mutation on its way is never dropped; nobody awaits a restored one, and one made in
   * this session rejects with OUTBOX_IDENTITY_MISMATCH (`details.discarded`).
   */
  async discardPendingMutations(filter: (mutation: PendingMutationView) => boolean = () => true): Promise<readonly PendingMutationView[]> {
    if (this.outboxLoading !== null) await this.outboxLoading;
    const discarded = this.step(() => this.state.discardWaitingForAuth((mutation) => filter(pendingMutationView(mutation)))).map(pendingMutationView);
    if (discarded.length > 0) await this.outbox?.flushed();
    return discarded;
  }

  /** Calls `listener` with `pendingMutations()` whenever it changes. Returns the function that stops it. */
  onPendingMutationsChange(listener: PendingMutationsListener): () => void {
    this.pendingListeners.add(listener);
    return () => this.pendingListeners.delete(listener);
  }

  /** Calls `listener` on every change of `connectionState` (e.g. to show "reconnecting"). */
  onConnectionChange(listener: ConnectionListener): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  // ---- functions -----------------------------------------------------------------------

  /** The query's current result, once (subscribes until the first result arrives). */
  query<Ref extends QueryReference>(ref: Ref, ...args: ArgsParameter<Ref>): Promise<ResultOf<Ref>> {
    return new Promise<ResultOf<Ref>>((resolve, reject) => {
      const finish = (): void => {
        this.waitingQueries.delete(rejectOnClose);
        unsubscribe();
      };
      const rejectOnClose = (error: CairnError): void => {
        finish();
        reject(error);
      };
      const unsubscribe = this.subscribe(
        ref,
        args[0] as ArgsOf<Ref>,
        (value) => {
          finish();
          resolve(value);
        },
        rejectOnClose,
      );
      this.waitingQueries.add(rejectOnClose);
    });
  }

  /**
   * Calls `onUpdate` with the query's result whenever it changes (with optimistic
   * updates applied), `onError` when the query fails (default: the client's onError).
   * Equal subscriptions share one server query. Returns the unsubscribe function.
   */
  subscribe<Ref extends QueryReference>(
    ref: Ref,
    args: ArgsOf<Ref>,
    onUpdate: (result: ResultOf<Ref>) => void,
    onError?: (error: CairnError) => void,
  ): () => void {
    const encoded = encodeArgs(args);
    const listener = { onUpdate: (value: Value) => onUpdate(value as ResultOf<Ref>), onError: onError ?? ((error: CairnError) => this.report(error)) };
    const subscription = this.step(() => this.state.subscribe(ref.path, encoded, listener));
    // A result already held reaches the new listener after subscribe returns, never inside it.
    queueMicrotask(() => this.step(() => this.state.notifyListeners()));
    return () => this.step(() => this.state.unsubscribe(subscription));
  }

  /** With args: runs the mutation. Without: a function that runs it, to which an optimistic update can be added. */
  mutation<Ref extends MutationReference>(ref: Ref): MutationFunction<Ref>;
  mutation<Ref extends MutationReference>(ref: Ref, args: ArgsOf<Ref>): Promise<ResultOf<Ref>>;
  mutation<Ref extends MutationReference>(ref: Ref, ...args: [] | [ArgsOf<Ref>]): MutationFunction<Ref> | Promise<ResultOf<Ref>> {
    if (args.length === 0) return this.mutationFunction(ref, undefined);
    return this.runMutation(ref, args[0], undefined);
  }

  /** Runs an action. It is never re-sent: if the connection drops first, it rejects with CONNECTION_LOST. */
  action<Ref extends ActionReference>(ref: Ref, ...args: ArgsParameter<Ref>): Promise<ResultOf<Ref>> {
    return this.encodeThen(args[0], (encoded) => this.step(() => this.state.act(ref.path, encoded)) as Promise<ResultOf<Ref>>);
  }

  // ---- auth, broadcasts, lifecycle -----------------------------------------------------

  /**
   * Authenticates this and every later connection; resolves with the verified subject.
   * With a token (null: anonymous), until it expires. With a fetcher (your auth
   * provider's "get token"), for as long as it yields tokens: the client asks it for the
   * first one, again with `forceRefresh` shortly before each token's lifetime (`exp` −
   * `iat`) ends, and once more when the server says the token expired or refuses it.
   * Refreshes that fail go to `onError`. A later `setAuth` replaces the fetcher.
   */
  setAuth(tokenOrFetcher: string | null | TokenFetcher): Promise<string | null> {
    this.tokenRefresher?.stop();
    this.tokenRefresher = null;
    if (typeof tokenOrFetcher !== "function") return this.step(() => this.state.setAuth(tokenOrFetcher));
    const refresher = new TokenRefresher({
      fetchToken: tokenOrFetcher,
      timers: this.timers,
      sendToken: (token) => this.step(() => this.state.setAuth(token)),
      report: (error) => this.report(error),
    });
    this.tokenRefresher = refresher;
    return refresher.start();
  }

  /** Sends `event` to the listeners of `topic` (fire and forget; dropped while disconnected). */
  publish(topic: string, event: Value): void {
    const encoded = encodeValue(event);
    this.step(() => this.state.publish(topic, encoded));
  }

  /**
   * Makes this connection and every later one an admin's with the deployment's admin key
   * (null: no longer): internal functions and the system functions (`_system:*`, see
   * docs/admin-api.md) may then be called and subscribed to, and the node's function logs
   * followed. Rejects with FORBIDDEN when the server refuses the key (then forgotten).
   * Never put the key in a page for users: it gives every power over the deployment.
   */
  setAdminKey(key: string | null): Promise<void> {
    return this.step(() => this.state.setAdminKey(key));
  }

  /**
   * Follows the node's function logs (an admin's connection, see setAdminKey): `listener`
   * gets the newest entries at once, then each batch as calls end, and how many this
   * connection missed by falling behind. Returns the function that stops it.
   */
  subscribeLogs(listener: LogListener): () => void {
    this.step(() => this.state.addLogListener(listener));
    return () => this.step(() => this.state.removeLogListener(listener));
  }

  /** Calls `listener` with each event broadcast to `topic`. Returns the function that stops it. */
  onBroadcast(topic: string, listener: (event: Value) => void): () => void {
    const registration = this.step(() => this.state.addBroadcastListener(topic, listener));
    return () => this.step(() => this.state.removeBroadcastListener(registration));
  }

  /**
   * Closes the connection for good: every waiting call rejects with CONNECTION_LOST
   * (mutations in an outbox stay there, for the next client over it). Resolves once the
   * outbox, if any, is released.
   */
  close(): Promise<void> {
    if (this.connection.state === "closed") return this.outboxClosed;
    if (this.outbox !== null) this.outboxClosed = this.outbox.close();
    this.outbox = null;
    this.changeConnection({ type: "closeRequested" });
    this.tokenRefresher?.stop();
    if (this.retryTimer !== null) this.timers.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.resendTimer !== null) this.timers.clearTimeout(this.resendTimer);
    this.resendTimer = null;
    this.dropSocket(CLIENT_CLOSE_CODES.normal);
    this.step(() => this.state.close());
    const error = new CairnError("CONNECTION_LOST", "the client was closed");
    for (const reject of [...this.waitingQueries]) reject(error);
    return this.outboxClosed;
  }

  // ---- mutations -----------------------------------------------------------------------

  private mutationFunction<Ref extends MutationReference>(ref: Ref, update: OptimisticUpdate<ArgsOf<Ref>> | undefined): MutationFunction<Ref> {
    const call = (...args: ArgsParameter<Ref>) => this.runMutation(ref, args[0], update);
    return Object.assign(call, {
      withOptimisticUpdate: (next: OptimisticUpdate<ArgsOf<Ref>>) => {
        if (update !== undefined) throw invalidArgument(`mutation ${ref.path} already has an optimistic update`);
        return this.mutationFunction(ref, next);
      },
    });
  }

  private runMutation<Ref extends MutationReference>(
    ref: Ref,
    args: ArgsOf<Ref> | undefined,
    update: OptimisticUpdate<ArgsOf<Ref>> | undefined,
  ): Promise<ResultOf<Ref>> {
    if (this.outboxLoading !== null) return this.outboxLoading.then(() => this.runMutation(ref, args, update));
    const optimistic = update === undefined ? undefined : { update, args: args ?? {} };
    return this.encodeThen(args, (encoded) => this.step(() => this.state.mutate(ref.path, encoded, optimistic)) as Promise<ResultOf<Ref>>);
  }

  /** Bad arguments reject the call's promise rather than throw from it. */
  private encodeThen<T>(args: unknown, call: (encoded: ReturnType<typeof encodeArgs>) => Promise<T>): Promise<T> {
    let encoded: ReturnType<typeof encodeArgs>;
    try {
      encoded = encodeArgs(args);
    } catch (error) {
      return Promise.reject(error);
    }
    return call(encoded);
  }

  // ---- socket --------------------------------------------------------------------------

  private openSocket(url: string): void {
    let socket: WebSocketLike;
    try {
      socket = new this.WebSocketClass(url);
    } catch (error) {
      this.report(error);
      this.socketClosed();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      if (this.socket === socket) this.step(() => this.state.connectionOpened(randomHex(this.random, CLIENT_ID_BYTES)));
    };
    socket.onmessage = (event) => {
      if (this.socket === socket) this.receiveFrame(event.data);
    };
    socket.onclose = () => {
      if (this.socket === socket) this.socketClosed();
    };
    // Every error is followed by a close event, which is where the client reconnects.
    socket.onerror = () => {};
  }

  private receiveFrame(data: unknown): void {
    if (typeof data !== "string") return this.badFrame(new CairnError("PROTOCOL_INVALID", "a server frame must be text"));
    let message: ReturnType<typeof parseServerMessage>;
    try {
      message = parseServerMessage(data);
    } catch (error) {
      return this.badFrame(error);
    }
    this.state.receive(message);
    const effects = this.state.takeEffects();
    if (message.type === "ConnectAck" && effects.resync === null) this.changeConnection({ type: "connectAcked" });
    this.run(effects);
  }

  private badFrame(error: unknown): void {
    this.report(error);
    this.resync();
  }

  /** The session can no longer be trusted: drop the socket and rebuild it on a new one. */
  private resync(): void {
    if (this.socket === null) return;
    this.dropSocket(CLIENT_CLOSE_CODES.resync);
    this.socketClosed();
  }

  private socketClosed(): void {
    this.socket = null;
    if (this.connection.state === "closed") return;
    // Whatever ended this connection, the next attempt goes to the next node of the list.
    this.changeConnection({ type: "socketClosed", nextUrl: this.urls.advance() });
    this.step(() => this.state.connectionLost());
    if (this.connection.state !== "waitingToReconnect") return;
    this.retryTimer = this.timers.setTimeout(() => this.retry(), this.connection.delayMs);
  }

  private retry(): void {
    this.retryTimer = null;
    if (this.connection.state !== "waitingToReconnect") return;
    const { url } = this.connection;
    this.changeConnection({ type: "retryTimerFired" });
    this.openSocket(url);
  }

  /** Detaches the current socket (its late events are ignored) and closes it. */
  private dropSocket(code: number): void {
    const socket = this.socket;
    this.socket = null;
    if (socket === null) return;
    socket.onopen = socket.onmessage = socket.onclose = null;
    try {
      socket.close(code);
    } catch {
      // Closing a socket that never opened may throw in some implementations; it is gone either way.
    }
  }

  // ---- effects -------------------------------------------------------------------------

  /** Runs one state-machine operation, then what it asked for. */
  private step<T>(operation: () => T): T {
    try {
      return operation();
    } finally {
      this.run(this.state.takeEffects());
    }
  }

  private run(effects: Effects): void {
    for (const frame of effects.send) this.send(frame);
    for (const callback of effects.callbacks) {
      try {
        callback();
      } catch (error) {
        this.report(error);
      }
    }
    if (effects.resync !== null) this.resync();
    if (effects.resendAfterMs !== null && this.resendTimer === null) {
      this.resendTimer = this.timers.setTimeout(() => {
        this.resendTimer = null;
        this.step(() => this.state.resendBackedOff());
      }, effects.resendAfterMs);
    }
    this.mutationsChanged();
  }

  /** Saves the outbox and tells pending-mutation listeners when the mutations changed. */
  private mutationsChanged(): void {
    const revision = this.state.mutationsRevision;
    if (revision === this.seenMutationsRevision) return;
    this.seenMutationsRevision = revision;
    // Closing settles every mutation, but those not answered stay in the outbox for the next client.
    if (!this.state.isClosed) this.outbox?.save(this.state.outboxRecord());
    if (this.pendingListeners.size === 0) return;
    const pending = this.pendingMutations();
    for (const listener of [...this.pendingListeners]) {
      try {
        listener(pending);
      } catch (error) {
        this.report(error);
      }
    }
  }

  private send(frame: ClientMessage): void {
    try {
      this.socket?.send(encodeMessage(frame));
    } catch (error) {
      // The socket is closing; its close event reconnects and everything unanswered is re-sent.
      this.report(error);
    }
  }

  private changeConnection(event: ConnectionEvent): void {
    // The backoff grows per cycle through the URLs, not per attempt (NodeUrls.cycleOf says why).
    this.connection = nextConnectionState(this.connection, event, (attempt) => reconnectDelayMs(this.urls.cycleOf(attempt), this.random, this.backoff));
    for (const listener of [...this.connectionListeners]) {
      try {
        listener(this.connection);
      } catch (error) {
        this.report(error);
      }
    }
  }

  private report(error: unknown): void {
    try {
      this.onError(error);
    } catch {
      // An onError that throws has nowhere further to report to.
    }
  }
}

function defaultWebSocket(): WebSocketConstructor {
  const WebSocket = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (WebSocket === undefined) throw invalidArgument("this platform has no global WebSocket: pass options.WebSocket (in Node, use createNodeClient from client/node)");
  return WebSocket;
}

function warn(error: unknown): void {
  console.warn("cairn client:", error);
}
