import {
  SESSION_DROPPABLE_BYTES_MAX,
  SESSION_DROPPABLE_FRAMES_MAX,
  SESSION_RESPONSE_BYTES_MAX,
  SESSION_RESPONSE_FRAMES_MAX,
  SESSION_SEND_BUFFER_BYTES,
} from "../base/index.js";
import type { Version } from "./protocol.js";

/** The socket as the outbox sees it: `written` is called once the frame left (or failed to). */
export interface FrameSink {
  send(text: string, written: (error?: Error) => void): void;
}

export interface OutboxLimits {
  readonly sendBufferBytes: number;
  readonly droppableFramesMax: number;
  readonly droppableBytesMax: number;
  readonly responseFramesMax: number;
  readonly responseBytesMax: number;
}

export const DEFAULT_OUTBOX_LIMITS: OutboxLimits = {
  sendBufferBytes: SESSION_SEND_BUFFER_BYTES,
  droppableFramesMax: SESSION_DROPPABLE_FRAMES_MAX,
  droppableBytesMax: SESSION_DROPPABLE_BYTES_MAX,
  responseFramesMax: SESSION_RESPONSE_FRAMES_MAX,
  responseBytesMax: SESSION_RESPONSE_BYTES_MAX,
};

interface QueuedFrame {
  readonly text: string;
  readonly kind: "response" | "droppable";
  /** For a Transition: the version it moves the client to, and the queries it removes. */
  readonly transition?: { readonly endVersion: Version; readonly removedQueryIds: readonly number[] };
}

export interface OutboxEvents {
  /** Queued Transitions were dropped: the client still has `handedVersion` and must be resynced from it. */
  onDropped(handedVersion: Version, removedQueryIds: number[]): void;
  /** The response budget overflowed: the session must be closed. */
  onResponseOverflow(): void;
}

/**
 * One session's frames on their way to its socket, in the order they were produced.
 * Frames go to the socket while it holds less than `sendBufferBytes` unsent; the rest
 * wait here. Two budgets: droppable frames (Transitions, Broadcasts), which past their
 * bound are all dropped at once (the session then resyncs the client), and responses,
 * which are never dropped — past their bound the session is closed.
 *
 * Sizes are counted in UTF-16 code units of the frame text (what `ws` is handed), a
 * close stand-in for bytes that costs nothing to compute.
 *
 * Invariants: frames reach the socket in production order; `handedVersion` is the end
 * version of the last Transition handed to the socket (what the client will apply
 * last); after a drop no droppable frame is queued.
 */
export class Outbox {
  private readonly queue: QueuedFrame[] = [];
  private head = 0;
  private socketChars = 0;
  private droppableFrames = 0;
  private droppableChars = 0;
  private responseFrames = 0;
  private responseChars = 0;
  private drainWaiters: (() => void)[] = [];
  private closed = false;
  handedVersion: Version = { querySet: 0, ts: 0 };
  droppedTotal = 0;

  constructor(
    private readonly sink: FrameSink,
    private readonly events: OutboxEvents,
    private readonly limits: OutboxLimits = DEFAULT_OUTBOX_LIMITS,
  ) {}

  /** Frames waiting beyond the socket. */
  get queuedFrames(): number {
    return this.queue.length - this.head;
  }

  /** Whether frames are waiting beyond the socket (the client is not keeping up). */
  get backlogged(): boolean {
    return this.queuedFrames > 0;
  }

  response(text: string): void {
    if (this.closed) return;
    this.queue.push({ text, kind: "response" });
    this.responseFrames++;
    this.responseChars += text.length;
    if (this.responseFrames > this.limits.responseFramesMax || this.responseChars > this.limits.responseBytesMax) {
      this.closed = true;
      this.events.onResponseOverflow();
      return;
    }
    this.pump();
  }

  droppable(text: string, transition?: QueuedFrame["transition"]): void {
    if (this.closed) return;
    this.queue.push(transition === undefined ? { text, kind: "droppable" } : { text, kind: "droppable", transition });
    this.droppableFrames++;
    this.droppableChars += text.length;
    this.pump();
    if (this.droppableFrames > this.limits.droppableFramesMax || this.droppableChars > this.limits.droppableBytesMax) this.dropDroppable();
  }

  /** Resolves once nothing waits beyond the socket. */
  drained(): Promise<void> {
    if (!this.backlogged || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Stops sending; queued frames are discarded and drain waiters released. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.head = 0;
    this.releaseDrainWaiters();
  }

  private pump(): void {
    while (!this.closed && this.head < this.queue.length && this.socketChars < this.limits.sendBufferBytes) {
      const frame = this.queue[this.head++]!;
      this.forget(frame);
      if (frame.transition !== undefined) this.handedVersion = frame.transition.endVersion;
      const chars = frame.text.length;
      this.socketChars += chars;
      this.sink.send(frame.text, () => {
        this.socketChars -= chars;
        this.pump();
      });
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      this.releaseDrainWaiters();
    } else if (this.head > 256 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private forget(frame: QueuedFrame): void {
    if (frame.kind === "response") {
      this.responseFrames--;
      this.responseChars -= frame.text.length;
    } else {
      this.droppableFrames--;
      this.droppableChars -= frame.text.length;
    }
  }

  private dropDroppable(): void {
    const removed: number[] = [];
    const kept: QueuedFrame[] = [];
    for (let at = this.head; at < this.queue.length; at++) {
      const frame = this.queue[at]!;
      if (frame.kind === "response") {
        kept.push(frame);
        continue;
      }
      this.forget(frame);
      this.droppedTotal++;
      if (frame.transition !== undefined) removed.push(...frame.transition.removedQueryIds);
    }
    this.queue.length = 0;
    this.head = 0;
    this.queue.push(...kept);
    this.events.onDropped(this.handedVersion, removed);
  }

  private releaseDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }
}
