import { Worker } from "node:worker_threads";
import { CairnError } from "../base/index.js";
import { ABORT, CLOSED } from "./foldWorker.mjs";
import { FOLD_SQL } from "./statements.js";

/** Longest `close` waits for the worker to close its connection (a stuck worker is then terminated). */
const WORKER_CLOSE_WAIT_MS = 10_000;

/** What a worker answers (foldWorker.mjs); `walFrames` (frames in the WAL) only after a checkpoint that ran. */
export interface FoldThreadReply {
  readonly walFrames?: number;
}

/**
 * One worker thread of foldWorker.mjs with its own connection to a store's file, asked
 * one thing at a time (a fold job or a checkpoint). Once the worker fails or exits, it
 * is broken for good: the pending request and every later one reject with
 * LOCAL_FOLD_FAILED, and `onBroken` hears of it once. After `close` nothing of the
 * thread touches the file.
 */
export class FoldThread {
  private readonly worker: Worker;
  private nextId = 0;
  private pending: { id: number; resolve: (reply: FoldThreadReply) => void; reject: (error: unknown) => void } | null = null;
  private closed = false;
  private broken: CairnError | null = null;
  /** Shared with the worker: [ABORT] raised by close, [CLOSED] raised by the worker. */
  private readonly signals = new Int32Array(new SharedArrayBuffer(8));

  constructor(
    private readonly path: string,
    role: "fold" | "checkpoint",
    pragmas: readonly string[],
    private readonly onBroken: (error: CairnError) => void,
  ) {
    this.worker = new Worker(new URL("./foldWorker.mjs", import.meta.url), {
      workerData: { cairnFold: { path, role, pragmas, sql: FOLD_SQL, signals: this.signals } },
    });
    // Idle, the worker must not keep the process alive; a request in flight refs it again.
    this.worker.unref();
    this.worker.on("message", (message: { id?: number; error?: { message: string; code?: string } } & FoldThreadReply) => {
      const pending = this.pending;
      if (message.id === undefined || pending === null || pending.id !== message.id) return;
      this.settle();
      if (message.error === undefined) pending.resolve(message.walFrames === undefined ? {} : { walFrames: message.walFrames });
      else pending.reject(this.failure(message.error.message, message.error));
    });
    this.worker.on("error", (error) => this.breakWith(this.failure(`the fold worker failed: ${String(error)}`, error)));
    this.worker.on("exit", (code) => {
      if (!this.closed) this.breakWith(this.failure(`the fold worker exited with code ${code}`));
    });
  }

  /** Sends `message` (the caller never has two in flight); rejects with LOCAL_CLOSED after `close`. */
  request(message: object, transfer: readonly ArrayBuffer[] = []): Promise<FoldThreadReply> {
    if (this.closed) return Promise.reject(closedError(this.path));
    if (this.broken !== null) return Promise.reject(this.broken);
    if (this.pending !== null) return Promise.reject(new CairnError("INTERNAL", `${this.path}: a second request to a busy fold thread`));
    return new Promise<FoldThreadReply>((resolve, reject) => {
      const id = this.nextId++;
      this.pending = { id, resolve, reject };
      this.worker.ref();
      this.worker.postMessage({ ...message, id }, [...transfer]);
    });
  }

  get usable(): boolean {
    return !this.closed && this.broken === null;
  }

  /**
   * Synchronous on purpose: a caller that closed the store may delete or reopen the file
   * at once, and a late write or checkpoint by the worker's connection would race it. A
   * fold in flight rolls back within a few hundred rows; a checkpoint runs to its end.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const pending = this.pending;
    this.settle();
    pending?.reject(closedError(this.path));
    if (this.broken === null) {
      Atomics.store(this.signals, ABORT, 1);
      this.worker.postMessage({ close: true });
      Atomics.wait(this.signals, CLOSED, 0, WORKER_CLOSE_WAIT_MS);
    }
    void this.worker.terminate();
  }

  private settle(): void {
    this.pending = null;
    this.worker.unref();
  }

  private breakWith(error: CairnError): void {
    if (this.broken !== null || this.closed) return;
    this.broken = error;
    const pending = this.pending;
    this.settle();
    pending?.reject(error);
    this.onBroken(error);
  }

  private failure(message: string, cause?: unknown): CairnError {
    return new CairnError("LOCAL_FOLD_FAILED", `folding into ${this.path} failed: ${message}`, {
      cause,
      details: { path: this.path },
    });
  }
}

export function closedError(path: string): CairnError {
  return new CairnError("LOCAL_CLOSED", `local store ${path} was closed before its fold finished`);
}
