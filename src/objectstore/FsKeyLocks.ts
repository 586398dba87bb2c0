import { createHash } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Clock } from "../base/clock.js";
import { CairnError } from "../base/errors.js";
import { FS_LOCK_POLL_MS_MAX, FS_LOCK_STALE_MS, FS_LOCK_WAIT_MS_MAX } from "../base/limits.js";
import { randomHex, type Random } from "../base/random.js";

/**
 * Per-key mutual exclusion between processes sharing one directory store.
 *
 * Invariants:
 * - A lock is a file `<locks>/<sha256(key)>` holding `{pid, hostname, acquiredAtMs,
 *   token}`. It appears complete or not at all: it is written to a temporary file and
 *   `link()`ed into place, which fails with EEXIST while another holder exists.
 * - Only the holder (matching token) removes its lock, except a breaker: a lock whose
 *   holder pid is dead on this host, whose age passed FS_LOCK_STALE_MS, or whose content
 *   is unreadable (a crash during a power loss) is stale. Breakers serialize through a
 *   second lock `<lock>.break` and remove the lock only if it is still the very record
 *   they judged stale, so a fresh lock taken meanwhile is never removed.
 * - A holder re-checks its token (`assertHeld`) immediately before it commits a write, so
 *   a holder that stalled past the stale bound and lost its lock writes nothing.
 */

interface LockRecord {
  readonly pid: number;
  readonly hostname: string;
  readonly acquiredAtMs: number;
  readonly token: string;
}

type ReadLock = LockRecord | "missing" | "unreadable";

const TOKEN_BYTES = 16;

export interface HeldLock {
  /** Throws STORE_TRANSIENT if the lock was broken by another process (nothing was written yet). */
  assertHeld(): Promise<void>;
}

export class FsKeyLocks {
  constructor(
    private readonly locksDirectory: string,
    private readonly temporaryDirectory: string,
    private readonly clock: Clock,
    private readonly random: Random,
  ) {}

  /** Runs `action` while holding the lock of `key`. */
  async withLock<T>(key: string, action: (lock: HeldLock) => Promise<T>): Promise<T> {
    const lockPath = join(this.locksDirectory, createHash("sha256").update(key, "utf8").digest("hex"));
    const token = await this.acquire(lockPath, key);
    const lock: HeldLock = {
      assertHeld: async () => {
        const record = await this.read(lockPath);
        if (typeof record === "string" || record.token !== token) {
          throw new CairnError("STORE_TRANSIENT", `lock of ${key} was broken while held; nothing was written`, {
            details: { key },
          });
        }
      },
    };
    try {
      return await action(lock);
    } finally {
      await this.release(lockPath, token);
    }
  }

  private async acquire(lockPath: string, key: string): Promise<string> {
    const deadlineMs = this.clock.nowMs() + FS_LOCK_WAIT_MS_MAX;
    for (let attempt = 0; ; attempt++) {
      const record = this.newRecord();
      if (await this.tryCreate(lockPath, record)) return record.token;
      if (await this.breakIfStale(lockPath)) continue;
      if (this.clock.nowMs() >= deadlineMs) {
        throw new CairnError("STORE_TRANSIENT", `lock of ${key} still held after ${FS_LOCK_WAIT_MS_MAX} ms`, {
          details: { key, lockPath },
        });
      }
      const ceilingMs = Math.min(FS_LOCK_POLL_MS_MAX, 2 ** Math.min(attempt, 8));
      await this.clock.sleep(1 + this.random.float() * ceilingMs);
    }
  }

  /** Removes the lock at `lockPath` if it is stale. True when the lock is gone now. */
  private async breakIfStale(lockPath: string): Promise<boolean> {
    const judged = await this.read(lockPath);
    if (judged === "missing") return true;
    if (!this.isStale(judged)) return false;
    const breakerPath = `${lockPath}.break`;
    if (!(await this.tryCreate(breakerPath, this.newRecord()))) {
      const breaker = await this.read(breakerPath);
      // A breaker that died inside its few-syscall window would block the key forever.
      if (breaker !== "missing" && this.isStale(breaker)) await unlinkIfPresent(breakerPath);
      return false;
    }
    try {
      const current = await this.read(lockPath);
      if (current === "missing") return true;
      if (sameRecord(current, judged)) await unlinkIfPresent(lockPath);
      return true;
    } finally {
      await unlinkIfPresent(breakerPath);
    }
  }

  private isStale(record: LockRecord | "unreadable"): boolean {
    if (record === "unreadable") return true;
    if (record.hostname === hostname() && !isProcessAlive(record.pid)) return true;
    return this.clock.nowMs() - record.acquiredAtMs > FS_LOCK_STALE_MS;
  }

  private async release(lockPath: string, token: string): Promise<void> {
    const record = await this.read(lockPath);
    if (typeof record !== "string" && record.token === token) await unlinkIfPresent(lockPath);
  }

  /** Places `record` at `path` unless something is there already. */
  private async tryCreate(path: string, record: LockRecord): Promise<boolean> {
    const temporaryPath = join(this.temporaryDirectory, `lock-${record.token}`);
    await writeFile(temporaryPath, JSON.stringify(record), { flag: "wx" });
    try {
      await link(temporaryPath, path);
      return true;
    } catch (error) {
      if (errorCode(error) === "EEXIST") return false;
      throw error;
    } finally {
      await unlinkIfPresent(temporaryPath);
    }
  }

  private async read(path: string): Promise<ReadLock> {
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT") return "missing";
      throw error;
    }
    return parseRecord(text);
  }

  private newRecord(): LockRecord {
    return {
      pid: process.pid,
      hostname: hostname(),
      acquiredAtMs: this.clock.nowMs(),
      token: randomHex(this.random, TOKEN_BYTES),
    };
  }
}

function parseRecord(text: string): LockRecord | "unreadable" {
  try {
    const value = JSON.parse(text) as Partial<LockRecord>;
    if (
      typeof value.pid === "number" &&
      typeof value.hostname === "string" &&
      typeof value.acquiredAtMs === "number" &&
      typeof value.token === "string"
    ) {
      return { pid: value.pid, hostname: value.hostname, acquiredAtMs: value.acquiredAtMs, token: value.token };
    }
  } catch {
    // fall through: a torn or foreign file
  }
  return "unreadable";
}

function sameRecord(current: ReadLock, judged: LockRecord | "unreadable"): boolean {
  if (current === "unreadable" || judged === "unreadable") return current === judged;
  return current !== "missing" && current.token === judged.token;
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return errorCode(error) === "EPERM";
  }
}

export async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}
