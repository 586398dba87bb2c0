import { type Clock, FILE_GC_GRACE_MS, FILE_GC_INTERVAL_MS, CairnError, type Random } from "../base/index.js";
import { FILE_CHUNKS_PREFIX, type FunctionRuntime } from "../functions/index.js";
import { globalsObject } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

export interface FileCollectorOptions {
  readonly store: ObjectStore;
  readonly runtime: FunctionRuntime;
  /** Whether this node writes shard 0 now: the collector runs there only (one per deployment). */
  readonly writesShardZero: () => boolean;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
  /** How long chunks no file refers to are left (default FILE_GC_GRACE_MS). */
  readonly graceMs?: number;
  /** The longest an upload may take (FileStore refuses a slower one); the grace must be longer. */
  readonly uploadDurationMsMax: number;
  /** How often it looks (default FILE_GC_INTERVAL_MS). */
  readonly intervalMs?: number;
}

export interface FileCollectorPass {
  /** Uploads whose chunks were listed. */
  readonly uploads: number;
  /** Uploads no file refers to, now waiting out the grace. */
  readonly waiting: number;
  /** Uploads deleted this pass, and their chunks. */
  readonly deletedUploads: number;
  readonly deletedChunks: number;
}

/**
 * Deletes the chunks of files nobody has any more (storedFiles.ts): those of deleted
 * files, of uploads that failed before their document was committed, of uploads a crash
 * cut off. It runs on shard 0's writer, every intervalMs.
 *
 * The rule that keeps a live file's chunks: an upload's chunks are deleted only when a
 * pass found no `_storage` document referring to the upload, and a pass at least graceMs
 * later found none either. An upload commits its document within uploadDurationMsMax of
 * writing its first chunk (or is refused), and the grace is longer than that, so an
 * upload still running when a pass first sees its chunks has committed — and is seen
 * referenced — by the pass that would delete them. Documents are read from this node's
 * local copy of every shard; shard 0, where files live, is written here, so its copy
 * holds every acknowledged commit. What a pass saw is kept in memory: a new writer starts
 * the grace over (it only deletes later, never earlier).
 *
 * The grace is at least the deployment's retention window (globals): a restore in place
 * to a moment when a file still existed finds its bytes.
 */
export class FileCollector {
  /** Uploads seen unreferenced, with when they were first seen so. */
  private readonly unreferencedSinceMs = new Map<string, number>();
  private readonly graceMs: number;
  private readonly intervalMs: number;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private wakeUp: (() => void) | null = null;

  constructor(private readonly options: FileCollectorOptions) {
    this.graceMs = options.graceMs ?? FILE_GC_GRACE_MS;
    this.intervalMs = options.intervalMs ?? FILE_GC_INTERVAL_MS;
    if (!(this.graceMs > options.uploadDurationMsMax)) {
      throw new CairnError("INVALID_ARGUMENT", `the file collector's grace (${this.graceMs} ms) must be longer than an upload may take (${options.uploadDurationMsMax} ms)`);
    }
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
  }

  /** One look: lists the chunks, records what no file refers to, deletes what nobody referred to for the whole grace. */
  async pass(): Promise<FileCollectorPass> {
    const { store, runtime, clock } = this.options;
    const uploads = new Map<string, string[]>();
    for await (const entry of store.list(FILE_CHUNKS_PREFIX)) {
      const upload = entry.key.slice(FILE_CHUNKS_PREFIX.length).split("/")[0]!;
      const keys = uploads.get(upload) ?? [];
      keys.push(entry.key);
      uploads.set(upload, keys);
    }
    const nowMs = clock.nowMs();
    // History is restorable for the retention window: a file deleted inside it keeps its bytes as long.
    const retentionMs = (await globalsObject(store, this.options.random).read())?.value.retentionMs ?? 0;
    const graceMs = Math.max(this.graceMs, retentionMs);
    let deletedUploads = 0;
    let deletedChunks = 0;
    for (const [upload, keys] of uploads) {
      if (this.stopped) break;
      if (await runtime.uploadReferenced(upload)) {
        this.unreferencedSinceMs.delete(upload);
        continue;
      }
      const sinceMs = this.unreferencedSinceMs.get(upload);
      if (sinceMs === undefined) {
        this.unreferencedSinceMs.set(upload, nowMs);
        continue;
      }
      if (nowMs - sinceMs < graceMs) continue;
      await store.deleteMany(keys);
      this.unreferencedSinceMs.delete(upload);
      deletedUploads++;
      deletedChunks += keys.length;
    }
    // Uploads gone from the listing (deleted by an earlier writer) are forgotten.
    for (const upload of this.unreferencedSinceMs.keys()) if (!uploads.has(upload)) this.unreferencedSinceMs.delete(upload);
    if (deletedUploads > 0) this.options.log(`files: deleted ${deletedChunks} chunk(s) of ${deletedUploads} upload(s) no stored file refers to`);
    return { uploads: uploads.size, waiting: this.unreferencedSinceMs.size, deletedUploads, deletedChunks };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.options.writesShardZero()) {
        try {
          await this.pass();
        } catch (error) {
          this.options.log(`files: collecting unreferenced chunks failed (tried again in ${Math.round(this.intervalMs / 1000)} s): ${(error as Error).message}`);
        }
      } else {
        this.unreferencedSinceMs.clear();
      }
      if (this.stopped) break;
      await new Promise<void>((resolve) => {
        const timer = this.options.clock.setTimer(this.intervalMs, resolve);
        this.wakeUp = () => {
          timer.cancel();
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }
}
