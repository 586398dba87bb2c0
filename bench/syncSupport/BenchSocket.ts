import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { CairnError } from "../../src/base/errors.js";
import { encodeMessage, parseServerMessage, type ClientMessage, type MutationResponseMessage, type ServerMessage, type TransitionMessage } from "../../src/sync/protocol.js";

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
 * nobody waits for are counted and dropped, so a long run keeps no backlog. A ProtocolError
 * or FatalError frame, or the socket closing, fails every waiter.
 */
export class BenchSocket {
  private waiters: Waiter[] = [];
  private nextRequestId = 0;
  private querySet = 0;
  private failure: Error | null = null;

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => this.receive(data.toString(), performance.now()));
    socket.on("close", (code, reason) => this.fail(new CairnError("CONNECTION_LOST", `the socket closed (${code} ${reason.toString()})`)));
  }

  /** Opens the socket and sends Connect; resolves once the server's ConnectAck is in. */
  static async connect(syncUrl: string): Promise<BenchSocket> {
    const socket = new WebSocket(syncUrl);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    const bench = new BenchSocket(socket);
    const ack = bench.expect((message) => message.type === "ConnectAck");
    bench.send({ type: "Connect", sessionId: randomBytes(8).toString("hex") });
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
    const queryId = this.querySet;
    const first = this.expect((message) => updatedValue(message, queryId) !== undefined);
    this.send({ type: "ModifyQuerySet", baseVersion: this.querySet, newVersion: this.querySet + 1, add: [{ queryId, path, args }], remove: [] });
    this.querySet++;
    return { queryId, value: updatedValue((await first).message, queryId) };
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
    const at = this.waiters.findIndex((waiter) => waiter.predicate(message));
    // Nobody waits for it (e.g. the mutator's own empty Transitions): dropped.
    if (at < 0) return;
    const [waiter] = this.waiters.splice(at, 1);
    clearTimeout(waiter!.timer);
    waiter!.resolve({ message, atMs });
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
