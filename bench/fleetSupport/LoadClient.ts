import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { CairnError } from "../../src/base/errors.js";
import { encodeMessage } from "../../src/sync/protocol.js";
import { progressPrinter } from "../kit/progress.js";

/** How long one answer may take before the client counts it as lost and re-sends (a failover takes a lease or so). */
const ANSWER_WAIT_MS_MAX = 60_000;

/** How the load generator's lines on stderr start (the nodes' and the benchmark's have their own). */
export const LOAD_PROGRESS_PREFIX = "[bench:fleet load] ";
const progress = progressPrinter(LOAD_PROGRESS_PREFIX);

/** The answer to one Mutation frame. */
export type MutationAnswer = { readonly ok: true; readonly atMs: number } | { readonly ok: false; readonly code: string; readonly atMs: number };

/**
 * One closed-loop client of bench:fleet: a raw sync-protocol socket that sends Mutation
 * frames the way the client library does — with its clientId, a seq per mutation (its
 * receipt key) and ackedThrough — and matches each MutationResponse by requestId. Frames
 * are parsed with JSON.parse only (Transitions and the rest are dropped): several hundred
 * of these run in one process, and full validation would cost more than the load.
 *
 * Lifecycle: open → closed. Once the socket closes (its node stopped or was killed),
 * every answer waited for resolves as CONNECTION_LOST and `closed` is true.
 */
export class LoadClient {
  private readonly waiting = new Map<number, { readonly resolve: (answer: MutationAnswer) => void; readonly timer: NodeJS.Timeout }>();
  private nextRequestId = 0;
  private isClosed = false;

  private constructor(
    private readonly socket: WebSocket,
    readonly clientId: string,
  ) {
    socket.on("message", (data) => this.receive(data.toString()));
    socket.on("close", () => this.closeAll());
    socket.on("error", () => this.closeAll());
  }

  static async connect(syncUrl: string, clientId: string): Promise<LoadClient> {
    const socket = new WebSocket(syncUrl);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    const client = new LoadClient(socket, clientId);
    const acked = new Promise<void>((resolve, reject) => {
      const onMessage = (data: WebSocket.RawData) => {
        const type = (JSON.parse(data.toString()) as { type?: string }).type;
        if (type === "ConnectAck") resolve();
        else if (type === "ProtocolError" || type === "FatalError") reject(new CairnError("INTERNAL", `Connect refused: ${data.toString().slice(0, 300)}`));
        else return;
        socket.off("message", onMessage);
      };
      socket.on("message", onMessage);
    });
    socket.send(encodeMessage({ type: "Connect", sessionId: `${clientId}-session`, clientId }));
    await acked;
    return client;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Sends mutation `seq` of this client (a re-send keeps its seq); resolves with its answer. */
  mutate(path: string, args: Record<string, unknown>, seq: number): Promise<MutationAnswer> {
    if (this.isClosed) return Promise.resolve({ ok: false, code: "CONNECTION_LOST", atMs: performance.now() });
    const requestId = this.nextRequestId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(requestId);
        resolve({ ok: false, code: "NO_ANSWER", atMs: performance.now() });
      }, ANSWER_WAIT_MS_MAX);
      this.waiting.set(requestId, { resolve, timer });
      // Closed loop: every mutation before `seq` was answered.
      this.socket.send(encodeMessage({ type: "Mutation", requestId, path, args: args as never, clientId: this.clientId, seq, ...(seq > 1 ? { ackedThrough: seq - 1 } : {}) }));
    });
  }

  close(): void {
    this.socket.close();
    this.closeAll();
  }

  private receive(text: string): void {
    const atMs = performance.now();
    const message = JSON.parse(text) as { type?: string; requestId?: number; success?: boolean; error?: { code?: string } };
    if (message.type === "MutationResponse" && message.requestId !== undefined) {
      const waiter = this.waiting.get(message.requestId);
      if (waiter === undefined) return;
      this.waiting.delete(message.requestId);
      clearTimeout(waiter.timer);
      waiter.resolve(message.success === true ? { ok: true, atMs } : { ok: false, code: message.error?.code ?? "UNKNOWN", atMs });
    } else if (message.type === "ProtocolError" || message.type === "FatalError") {
      progress(`${this.clientId}: ${text.slice(0, 300)}`);
      this.socket.close();
      this.closeAll();
    }
  }

  private closeAll(): void {
    this.isClosed = true;
    for (const [requestId, waiter] of this.waiting) {
      this.waiting.delete(requestId);
      clearTimeout(waiter.timer);
      waiter.resolve({ ok: false, code: "CONNECTION_LOST", atMs: performance.now() });
    }
  }
}
