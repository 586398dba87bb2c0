import { Worker } from "node:worker_threads";
import { CairnError } from "../base/errors.js";
import { type FoldJob, transferablesOf } from "./FoldJob.js";
import { ABORT, CLOSED, prepareFold, writeFold, type FoldStatements } from "./foldWorker.mjs";
import { foldWorkerPragmas, type SqliteDatabase } from "./schema.js";
import { FOLD_SQL } from "./statements.js";

/**
 * Writes fold jobs into a store's file, one at a time (the caller never has two in
 * flight). `fold` resolves once the job's transaction committed and rejects once it
 * rolled back; after `close` an unfinished fold rejects with LOCAL_CLOSED and nothing
 * more is written.
 */
export interface Folder {
  fold(job: FoldJob): Promise<void>;
  /**
   * Copies committed WAL frames back into the file on the folder's own connection: PASSIVE
   * alongside a writer on another connection (a restore loading its staging tables),
   * TRUNCATE when nothing else writes. Never while a fold is in flight (one at a time, as
   * folds). Resolves either way: a checkpoint that cannot finish loses nothing, and the
   * next automatic one picks up.
   */
  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<void>;
  /**
   * Ends now: a fold in flight is abandoned (its transaction rolls back, as in a crash),
   * and once this returns nothing of the folder touches the file any more.
   */
  close(): void;
}

/** Longest `close` waits for the worker to close its connection (a stuck worker is then terminated). */
const WORKER_CLOSE_WAIT_MS = 10_000;

/**
 * A file store folds on a worker thread with its own connection: the B-tree work (most
 * of an apply's cost at scale) runs on another core than the event loop, and readers on
 * the main connection see each fold atomically when it commits (WAL).
 */
export class WorkerFolder implements Folder {
  private readonly worker: Worker;
  private nextId = 0;
  private pending: { id: number; resolve: () => void; reject: (error: unknown) => void } | null = null;
  private closed = false;
  private broken: CairnError | null = null;
  /** Shared with the worker: [ABORT] raised by close, [CLOSED] raised by the worker. */
  private readonly signals = new Int32Array(new SharedArrayBuffer(8));

  constructor(
    private readonly path: string,
    pageBytes: number,
  ) {
    this.worker = new Worker(new URL("./foldWorker.mjs", import.meta.url), {
      workerData: { cairnFold: { path, pragmas: foldWorkerPragmas(pageBytes), sql: FOLD_SQL, signals: this.signals } },
    });
    // Idle, the worker must not keep the process alive; a fold in flight refs it again.
    this.worker.unref();
    this.worker.on("message", (message: { id?: number; error?: { message: string; code?: string } }) => {
      const pending = this.pending;
      if (message.id === undefined || pending === null || pending.id !== message.id) return;
      this.settle();
      if (message.error === undefined) pending.resolve();
      else pending.reject(this.foldError(message.error.message, message.error));
    });
    this.worker.on("error", (error) => this.breakWith(this.foldError(`the fold worker failed: ${String(error)}`, error)));
    this.worker.on("exit", (code) => {
      if (!this.closed) this.breakWith(this.foldError(`the fold worker exited with code ${code}`));
    });
  }

  fold(job: FoldJob): Promise<void> {
    if (this.closed) return Promise.reject(closedError(this.path));
    if (this.broken !== null) return Promise.reject(this.broken);
    return new Promise<void>((resolve, reject) => {
      const id = this.nextId++;
      this.pending = { id, resolve, reject };
      this.worker.ref();
      this.worker.postMessage({ id, job }, transferablesOf(job));
    });
  }

  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<void> {
    if (this.closed || this.broken !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const id = this.nextId++;
      this.pending = { id, resolve, reject: () => resolve() };
      this.worker.ref();
      this.worker.postMessage({ id, checkpoint: mode });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const pending = this.pending;
    this.settle();
    pending?.reject(closedError(this.path));
    if (this.broken === null) {
      // Synchronous on purpose: a caller that closed the store may delete or reopen the
      // file at once, and a late checkpoint by the worker's connection would race it.
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
  }

  private foldError(message: string, cause?: unknown): CairnError {
    return new CairnError("LOCAL_FOLD_FAILED", `folding into ${this.path} failed: ${message}`, {
      cause,
      details: { path: this.path },
    });
  }
}

/**
 * An in-memory store (":memory:", tests and tools) has no file a worker could open: it
 * folds on its own connection, in a later macrotask, so folds still interleave with
 * applies and reads as they do on a worker.
 */
export class InlineFolder implements Folder {
  private readonly statements: FoldStatements;
  private closed = false;

  constructor(db: SqliteDatabase) {
    this.statements = prepareFold(db, FOLD_SQL);
  }

  fold(job: FoldJob): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        if (this.closed) {
          reject(closedError(":memory:"));
          return;
        }
        try {
          writeFold(this.statements, job);
          resolve();
        } catch (error) {
          reject(new CairnError("LOCAL_FOLD_FAILED", `folding into :memory: failed: ${String(error)}`, { cause: error }));
        }
      });
    });
  }

  /** An in-memory database has no WAL. */
  checkpoint(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    this.closed = true;
  }
}

function closedError(path: string): CairnError {
  return new CairnError("LOCAL_CLOSED", `local store ${path} was closed before its fold finished`);
}
