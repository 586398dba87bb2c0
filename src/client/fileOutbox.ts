import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { CairnError } from "../base/index.js";
import type { OutboxStore } from "./OutboxStore.js";

/**
 * A client's outbox in one file, for Node (exported by client/node.ts only: browsers
 * cannot bundle node:fs). One client at a time: `<path>.lock` names the process that
 * holds it.
 *
 * Invariants:
 * - the file is replaced by writing `<path>.tmp`, fsyncing it, renaming it over the
 *   file and fsyncing the directory: a crash leaves the old text or the new, and `save`
 *   resolves only once the new one is on disk;
 * - the lock file is created exclusively (O_EXCL); a lock left by a process of this host
 *   that no longer exists is taken over, any other is OUTBOX_LOCKED naming its holder
 *   (and the file to delete if that holder is really gone). Two processes taking over
 *   the same dead holder's lock at the same instant are not told apart: start one
 *   process per outbox;
 * - unreadable text is kept at `<path>.invalid-<n>` (the first n free) before the file
 *   is removed.
 */
export function fileOutbox(path: string): OutboxStore {
  return new FileOutbox(path);
}

interface LockRecord {
  readonly pid: number;
  readonly hostname: string;
}

/** Attempts at taking the lock: each one after removing a dead holder's lock. */
const LOCK_ATTEMPTS_MAX = 3;
/** Names tried for a quarantined file before giving up (a directory full of them needs a person anyway). */
const QUARANTINE_NAMES_MAX = 1_000;

class FileOutbox implements OutboxStore {
  readonly description: string;
  private readonly lockPath: string;
  private lockText: string | null = null;

  constructor(private readonly path: string) {
    this.description = `file ${path}`;
    this.lockPath = `${path}.lock`;
  }

  async open(): Promise<string | null> {
    await unavailableOnError("create the outbox's directory", () => mkdir(dirname(this.path), { recursive: true }));
    await this.lock();
    try {
      return await readFile(this.path, "utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT") return null;
      throw unavailable(`read the outbox ${this.path}`, error);
    }
  }

  async save(text: string | null): Promise<void> {
    await unavailableOnError(`write the outbox ${this.path}`, async () => {
      if (text === null) await unlinkIfPresent(this.path);
      else await writeDurably(`${this.path}.tmp`, text, "w", this.path);
      await syncDirectory(dirname(this.path));
    });
  }

  async quarantine(text: string): Promise<string> {
    return unavailableOnError(`keep the unreadable outbox ${this.path} aside`, async () => {
      for (let n = 1; n <= QUARANTINE_NAMES_MAX; n++) {
        const keptAt = `${this.path}.invalid-${n}`;
        try {
          await writeDurably(keptAt, text, "wx", null);
        } catch (error) {
          if (errorCode(error) === "EEXIST") continue;
          throw error;
        }
        await unlinkIfPresent(this.path);
        await syncDirectory(dirname(this.path));
        return keptAt;
      }
      throw new Error(`${QUARANTINE_NAMES_MAX} files ${this.path}.invalid-<n> exist already`);
    });
  }

  async close(): Promise<void> {
    if (this.lockText === null) return;
    const own = this.lockText;
    this.lockText = null;
    await unavailableOnError(`release the outbox lock ${this.lockPath}`, async () => {
      if ((await readIfPresent(this.lockPath)) === own) await unlinkIfPresent(this.lockPath);
    });
  }

  private async lock(): Promise<void> {
    const own = JSON.stringify({ pid: process.pid, hostname: hostname() } satisfies LockRecord);
    for (let attempt = 1; attempt <= LOCK_ATTEMPTS_MAX; attempt++) {
      try {
        await writeDurably(this.lockPath, own, "wx", null);
        this.lockText = own;
        return;
      } catch (error) {
        if (errorCode(error) !== "EEXIST") throw unavailable(`create the outbox lock ${this.lockPath}`, error);
      }
      const held = await unavailableOnError(`read the outbox lock ${this.lockPath}`, () => readIfPresent(this.lockPath));
      if (held === null) continue;
      const holder = parseLock(held);
      if (holder === null || !isGone(holder)) throw this.locked(holder);
      await unavailableOnError(`remove the dead holder's outbox lock ${this.lockPath}`, () => unlinkIfPresent(this.lockPath));
    }
    throw this.locked(null);
  }

  private locked(holder: LockRecord | null): CairnError {
    const who = holder === null ? "a holder this client cannot identify" : `process ${holder.pid} on host ${holder.hostname}`;
    return new CairnError("OUTBOX_LOCKED", `the outbox ${this.path} is held by ${who}: give each client its own outbox file (if that process is really gone, delete ${this.lockPath})`, {
      details: { path: this.path, lockPath: this.lockPath, ...(holder === null ? {} : { pid: holder.pid, hostname: holder.hostname }) },
    });
  }
}

/** Writes `text` to `path` (flag "w" or "wx") and fsyncs it; renames it to `target` when given. */
async function writeDurably(path: string, text: string, flag: "w" | "wx", target: string | null): Promise<void> {
  const handle = await open(path, flag);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (target !== null) await rename(path, target);
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function parseLock(text: string): LockRecord | null {
  try {
    const value = JSON.parse(text) as Partial<LockRecord>;
    if (Number.isSafeInteger(value.pid) && (value.pid as number) > 0 && typeof value.hostname === "string") return { pid: value.pid as number, hostname: value.hostname };
  } catch {
    // a torn or foreign lock file: its holder cannot be judged
  }
  return null;
}

/** Whether the lock's holder is provably gone: a process of this host that no longer exists (this process never is). */
function isGone(holder: LockRecord): boolean {
  if (holder.hostname !== hostname() || holder.pid === process.pid) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return errorCode(error) === "ESRCH";
  }
}

async function readIfPresent(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return null;
    throw error;
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

async function unavailableOnError<T>(what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (typeof error === "object" && error !== null && typeof (error as CairnError).code === "string" && (error as CairnError).code.startsWith("OUTBOX_")) throw error;
    throw unavailable(what, error);
  }
}

function unavailable(what: string, cause: unknown): CairnError {
  return new CairnError("OUTBOX_UNAVAILABLE", `could not ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}
