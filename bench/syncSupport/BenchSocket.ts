import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { CairnError } from "../../src/base/errors.js";
import { encodeMessage, parseServerMessage, type ClientMessage, type MutationResponseMessage, type ServerMessage, type TransitionMessage } from "../../src/sync/protocol.js";

type ConnectMessage = Extract<ClientMessage, { type: "Connect" }>;

/** What a socket's Connect announces beyond a fresh random session id. */
export interface BenchConnectOptions {
  /** The session id to send (default: 16 random hex digits). */
  readonly sessionId?: string;
  /** Announce that this client applies QueryDiffs (issue 30). */
  readonly diffs?: boolean;
  /** Resume a previous session: its id and the endVersion.ts of the last Transition this client applied. */
  readonly resume?: NonNullable<ConnectMessage["resume"]>;
}

/** One query a ModifyQuerySet adds; `resultHash`: the hash (or last checksum) of the result the client holds. */
export interface BenchQuery {
  readonly path: string;
  readonly args: Record<string, unknown>;
  readonly resultHash?: string;
}

/** How long a frame the benchmark waits for may take before the run fails (no hang on a lost frame). */
export const FRAME_WAIT_MS_MAX = 30_000;

/** A server frame and when it arrived (performance.now(), ms, taken in the socket's message event). */
export interface TimedFrame<M extends ServerMessage = ServerMessage> {
  readonly message: M;
  readonly atMs: number;
}

export type SuccessfulMutationResponse = Extract<MutationResponseMessage, { success: true }>;

interface Waiter {
  readonly predicate: (message: ServerMessage) => boolean;
  readonly resolve: (frame: TimedFrame) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * A raw sync-protocol client over `ws` that stamps each frame's arrival, for timing
 * frames exactly (the client library would add its own processing to the figures).
 * Frames are validated with parseServerMessage.
 *
 * A caller registers what it waits for (`expect`) before sending what causes it; frames
 * nobody waits for are dropped, so a long run keeps no backlog. A ProtocolError or
 * FatalError frame, or the socket closing, fails every waiter.
 *
 * Whatever waits, the socket keeps what a client holds of its session: the payload bytes
 * of every frame it received (the server negotiates no compression, so these are the
 * bytes sent but for 2–10 bytes of WebSocket framing each), the endVersion.ts of the last
 * Transition (what a resume names as `sinceTs`), and each query's result hash as a
 * client echoes it (QueryUpdated / QueryUnchanged `hash`, a QueryDiff's `checksum`).
 * `onFrame`, if set, sees every valid frame first (a client applying diffs).
 */
export class BenchSocket {
  private waiters: Waiter[] = [];
  private nextRequestId = 0;
  private querySet = 0;
  private nextQueryId = 0;
  private failure: Error | null = null;
  /** Payload bytes of every frame received (text as sent, before parsing). */
  bytesReceived = 0;
  framesReceived = 0;
  /** endVersion.ts of the last Transition received (-1: none yet), and when it came (performance.now()). */
  lastTransitionTs = -1;
  lastTransitionAtMs = 0;
  /** Each query's result hash as the client would echo it in a ModifyQuerySet `resultHash`. */
  readonly hashes = new Map<number, string>();
  /** Called with every valid frame before any waiter sees it. */
  onFrame: ((message: ServerMessage, atMs: number) => void) | null = null;

  private constructor(
    private readonly socket: WebSocket,
    readonly sessionId: string,
  ) {
    socket.on("message", (data) => {
      const atMs = performance.now();
      const bytes = rawBytes(data);
      this.bytesReceived += bytes.length;
      this.framesReceived++;
      this.receive(bytes.toString(), atMs);
    });
    socket.on("close", (code, reason) => this.fail(new CairnError("CONNECTION_LOST", `the socket closed (${code} ${reason.toString()})`)));
  }

  /** Opens the socket and sends Connect (with `options`); resolves once the server's ConnectAck is in. */
  static async connect(syncUrl: string, options: BenchConnectOptions = {}): Promise<BenchSocket> {
    const socket = new WebSocket(syncUrl);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    const sessionId = options.sessionId ?? randomBytes(8).toString("hex");
    const bench = new BenchSocket(socket, sessionId);
    const ack = bench.expect((message) => message.type === "ConnectAck");
    bench.send({
      type: "Connect",
      sessionId,
      ...(options.diffs === true ? { diffs: true } : {}),
      ...(options.resume !== undefined ? { resume: options.resume } : {}),
    });
    await ack;
    return bench;
  }

  /** Sends a frame; returns performance.now() just before it was handed to the socket. */
  send(message: ClientMessage): number {
    const sentMs = performance.now();
    this.socket.send(encodeMessage(message));
    return sentMs;
  }

  /** The next frame (arriving from now on) that matches. */
  expect<M extends ServerMessage>(predicate: (message: ServerMessage) => message is M): Promise<TimedFrame<M>>;
  expect(predicate: (message: ServerMessage) => boolean): Promise<TimedFrame>;
  expect(predicate: (message: ServerMessage) => boolean): Promise<TimedFrame> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.timer !== timer);
        reject(new CairnError("TIMEOUT", `no matching frame within ${FRAME_WAIT_MS_MAX} ms`));
      }, FRAME_WAIT_MS_MAX);
      this.waiters.push({ predicate, resolve, reject, timer });
    });
  }

  /**
   * Subscribes to one query (a ModifyQuerySet adding it); resolves with its queryId and
   * first value once the Transition carrying it is in.
   */
  async subscribe(path: string, args: Record<string, unknown>): Promise<{ readonly queryId: number; readonly value: unknown }> {
    const queryId = this.nextQueryId++;
    const first = this.expect((message) => updatedValue(message, queryId) !== undefined);
    this.send({ type: "ModifyQuerySet", baseVersion: this.querySet, newVersion: this.querySet + 1, add: [{ queryId, path, args }], remove: [] });
    this.querySet++;
    return { queryId, value: updatedValue((await first).message, queryId) };
  }

  /**
   * Adds `queries` in one ModifyQuerySet (with their `resultHash` where given); resolves
   * with their queryIds, in order, and the Transition that answered it (the first to
   * reach the new query-set version: the session handles its work in order).
   */
  async subscribeAll(queries: readonly BenchQuery[]): Promise<{ readonly queryIds: readonly number[]; readonly transition: TimedFrame<TransitionMessage> }> {
    const queryIds = queries.map(() => this.nextQueryId++);
    const newVersion = this.querySet + 1;
    const answered = this.expect((message): message is TransitionMessage => message.type === "Transition" && message.endVersion.querySet === newVersion);
    const add = queries.map(({ path, args, resultHash }, at) => ({ queryId: queryIds[at]!, path, args, ...(resultHash !== undefined ? { resultHash } : {}) }));
    this.send({ type: "ModifyQuerySet", baseVersion: this.querySet, newVersion, add, remove: [] });
    this.querySet = newVersion;
    return { queryIds, transition: await answered };
  }

  /** Removes every query the session holds (one ModifyQuerySet); resolves once the Transition answering it is in. */
  async unsubscribeAll(): Promise<void> {
    const remove = [...this.hashes.keys()];
    const newVersion = this.querySet + 1;
    const answered = this.expect((message) => message.type === "Transition" && message.endVersion.querySet === newVersion);
    this.send({ type: "ModifyQuerySet", baseVersion: this.querySet, newVersion, add: [], remove });
    this.querySet = newVersion;
    await answered;
  }

  /**
   * Resolves with the arrival time of the Transition that brought the session to `ts` or
   * past it (at once, with the last Transition's time, if one already has).
   */
  reached(ts: number): Promise<number> {
    if (this.lastTransitionTs >= ts) return Promise.resolve(this.lastTransitionAtMs);
    return this.expect((message) => message.type === "Transition" && message.endVersion.ts >= ts).then((frame) => frame.atMs);
  }

  /**
   * Sends a Mutation. `response` is its successful MutationResponse; `settled` also waits
   * for the Transition the server owes the origin at or above the commit's ts, so a
   * caller that awaits it has let the server finish all of this commit's work for this
   * session before the next one.
   */
  mutate(path: string, args: Record<string, unknown>): { readonly sentMs: number; readonly response: Promise<TimedFrame<SuccessfulMutationResponse>>; readonly settled: Promise<void> } {
    const requestId = this.nextRequestId++;
    // Both waiters exist before the frame is sent: ws may deliver the response and the
    // Transition behind it in one synchronous burst, with no turn in between to register
    // the second. The response's predicate records its ts for the Transition's.
    let committedTs: number | null = null;
    const answered = this.expect((message): message is MutationResponseMessage => {
      if (message.type !== "MutationResponse" || message.requestId !== requestId) return false;
      committedTs = message.success ? message.ts : -1;
      return true;
    });
    const origin = this.expect((message) => message.type === "Transition" && committedTs !== null && message.endVersion.ts >= committedTs);
    const response = answered.then((frame) => {
      const message = frame.message;
      if (!message.success) throw new CairnError("INTERNAL", `${path} failed: ${message.error.code} ${message.error.message}`);
      return frame as TimedFrame<SuccessfulMutationResponse>;
    });
    const sentMs = this.send({ type: "Mutation", requestId, path, args });
    return { sentMs, response, settled: Promise.all([response, origin]).then(() => undefined) };
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.close();
    });
  }

  private receive(text: string, atMs: number): void {
    let message: ServerMessage;
    try {
      message = parseServerMessage(text);
    } catch (error) {
      return this.fail(error as Error);
    }
    if (message.type === "ProtocolError" || message.type === "FatalError") {
      return this.fail(new CairnError("INTERNAL", `the server sent ${message.type}: ${message.error.code} ${message.error.message}`));
    }
    if (message.type === "Transition") this.hold(message, atMs);
    this.onFrame?.(message, atMs);
    const at = this.waiters.findIndex((waiter) => waiter.predicate(message));
    // Nobody waits for it (e.g. the mutator's own empty Transitions): dropped.
    if (at < 0) return;
    const [waiter] = this.waiters.splice(at, 1);
    clearTimeout(waiter!.timer);
    waiter!.resolve({ message, atMs });
  }

  /** What a client keeps of a Transition: its ts, and each query's hash to echo. */
  private hold(transition: TransitionMessage, atMs: number): void {
    this.lastTransitionTs = transition.endVersion.ts;
    this.lastTransitionAtMs = atMs;
    for (const modification of transition.modifications) {
      if (modification.type === "QueryRemoved") this.hashes.delete(modification.queryId);
      else if (modification.type === "QueryDiff") this.hashes.set(modification.queryId, modification.checksum);
      else this.hashes.set(modification.queryId, modification.hash);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }
}

/** The value a Transition gives query `queryId` (QueryUpdated), or undefined if it does not update it. */
export function updatedValue(message: ServerMessage, queryId: number): unknown {
  if (message.type !== "Transition") return undefined;
  for (const modification of (message as TransitionMessage).modifications) {
    if (modification.type === "QueryUpdated" && modification.queryId === queryId) return modification.value;
  }
  return undefined;
}

/** A `ws` message's bytes, whatever form it arrived in. */
function rawBytes(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
