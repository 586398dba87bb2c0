import { CairnError } from "../base/index.js";
import { type FoldJob, transferablesOf } from "./FoldJob.js";
import { closedError, FoldThread } from "./FoldThread.js";
import { prepareFold, writeFold, type FoldStatements } from "./foldWorker.mjs";
import { CONNECTION_PRAGMAS, type SqliteDatabase } from "./schema.js";
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
   * TRUNCATE when nothing else writes. Runs after the checkpoints already asked for.
   * Resolves either way: a checkpoint that cannot finish loses nothing, and the next one
   * picks up.
   */
  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<void>;
  /**
   * Ends now: a fold in flight is abandoned (its transaction rolls back, as in a crash),
   * and once this returns nothing of the folder touches the file any more.
   */
  close(): void;
}

/**
 * A file store folds on a worker thread with its own connection: the B-tree work (most
 * of an apply's cost at scale) runs on another core than the event loop, and readers on
 * the main connection see each fold atomically when it commits (WAL).
 *
 * Checkpoints run on a second worker, beside the folds: copying a fold's pages back from
 * the WAL cost the fold worker ~40% of its time at 5M documents (8 of ~23 µs per
 * document). SQLite rewinds the WAL only when a write transaction begins with every frame
 * copied back, which never happens while folds follow each other with a checkpoint
 * always behind; so once the WAL holds `restartBytes` (LOCAL_WAL_RESTART_BYTES), the next
 * fold first waits for the checkpoints to catch up, and its transaction starts the WAL
 * over.
 */
export class WorkerFolder implements Folder {
  private readonly folds: FoldThread;
  private readonly checkpoints: FoldThread;
  /** The checkpoints queued or running, in order; never rejects. */
  private checkpointTail: Promise<void> = Promise.resolve();
  /** A PASSIVE checkpoint is queued and not yet started: it covers every fold committed before it starts. */
  private checkpointQueued = false;
  /** Frames in the WAL as the last checkpoint found it. */
  private walFrames = 0;
  private readonly restartFrames: number;

  /** The first failure of either worker: neither half goes on without the other (no checkpoints, no bound on the WAL). */
  private broken: CairnError | null = null;

  constructor(path: string, pageBytes: number, restartBytes: number) {
    const breakWith = (error: CairnError) => {
      this.broken ??= error;
      this.close();
    };
    this.folds = new FoldThread(path, "fold", CONNECTION_PRAGMAS, breakWith);
    this.checkpoints = new FoldThread(path, "checkpoint", CONNECTION_PRAGMAS, breakWith);
    this.restartFrames = Math.max(1, Math.floor(restartBytes / pageBytes));
  }

  async fold(job: FoldJob): Promise<void> {
    if (this.walFrames >= this.restartFrames) await this.checkpointTail;
    if (this.broken !== null) throw this.broken;
    try {
      await this.folds.request({ job }, transferablesOf(job));
    } catch (error) {
      throw this.broken ?? error;
    }
    this.queueCheckpoint();
  }

  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<void> {
    const run = this.checkpointTail.then(() => this.runCheckpoint(mode));
    this.checkpointTail = run;
    return run;
  }

  close(): void {
    this.folds.close();
    this.checkpoints.close();
  }

  private queueCheckpoint(): void {
    if (this.checkpointQueued) return;
    this.checkpointQueued = true;
    this.checkpointTail = this.checkpointTail.then(() => {
      this.checkpointQueued = false;
      return this.runCheckpoint("PASSIVE");
    });
  }

  private async runCheckpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<void> {
    if (!this.checkpoints.usable) return;
    try {
      const { walFrames } = await this.checkpoints.request({ checkpoint: mode });
      if (walFrames !== undefined) this.walFrames = walFrames;
    } catch {
      // Closed or broken: the fold worker's next request says so.
    }
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


