import type { Timers } from "../../src/client/Timers.js";
import type { WebSocketLike } from "../../src/client/WebSocketLike.js";
import { parseClientMessage, type ClientMessage, type ServerMessage } from "../../src/sync/protocol.js";

/** A WebSocket the test plays the server side of: it opens, delivers and closes when told. */
export class FakeSocket implements WebSocketLike {
  static created: FakeSocket[] = [];
  onopen: WebSocketLike["onopen"] = null;
  onmessage: WebSocketLike["onmessage"] = null;
  onclose: WebSocketLike["onclose"] = null;
  onerror: WebSocketLike["onerror"] = null;
  /** Frames the client sent, parsed with the protocol's own client schema. */
  readonly sent: ClientMessage[] = [];
  closedWith: number | null = null;

  constructor(readonly url: string) {
    FakeSocket.created.push(this);
  }

  static latest(): FakeSocket {
    const socket = FakeSocket.created.at(-1);
    if (socket === undefined) throw new Error("no socket was created");
    return socket;
  }

  send(data: string): void {
    this.sent.push(parseClientMessage(data));
  }

  close(code?: number): void {
    this.closedWith = code ?? 1005;
  }

  open(): void {
    this.onopen?.({});
  }

  deliver(message: ServerMessage | string): void {
    this.onmessage?.({ data: typeof message === "string" ? message : JSON.stringify(message) });
  }

  /** Opens and acknowledges the session, as a server would answer Connect. */
  accept(ts = 0): void {
    this.open();
    const connect = this.sent[0];
    if (connect?.type !== "Connect") throw new Error("the client did not start with Connect");
    this.deliver({ type: "ConnectAck", deploymentId: "d", sessionId: connect.sessionId, known: [], results: [], ts });
  }

  dropByServer(): void {
    this.onclose?.({ code: 1006, reason: "" });
  }
}

/** Timers the test fires by hand; nothing ever waits for wall-clock time. */
export class ManualTimers implements Timers {
  private nextHandle = 1;
  readonly pending = new Map<number, { readonly callback: () => void; readonly delayMs: number }>();

  setTimeout(callback: () => void, delayMs: number): unknown {
    const handle = this.nextHandle++;
    this.pending.set(handle, { callback, delayMs });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  delays(): number[] {
    return [...this.pending.values()].map((timer) => timer.delayMs);
  }

  fireAll(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const timer of due) timer.callback();
  }
}
