import { createHash } from "node:crypto";
import { link, open, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  type Clock,
  CairnError,
  FS_LOCK_POLL_MS_MAX,
  FS_LOCK_STALE_MS,
  FS_LOCK_WAIT_MS_MAX,
  randomHex,
  type Random,
} from "../base/index.js";
import { isProcessGone, ownProcessIdentity, parseProcessLockRecord, type ProcessLockRecord } from "./processLiveness.js";

/**
 * Per-key mutual exclusion between processes sharing one directory store.
 *
 * Invariants:
 * - A lock is a file `<locks>/<sha256(key)>` holding `{pid, hostname, processStartTime,
 *   acquiredAtMs, token}`. It appears complete or not at all: it is written to a temporary
 *   file and `link()`ed into place, which fails with EEXIST while another holder exists.
 * - Only the holder (matching token) removes its lock, except a breaker, and a breaker
 *   removes a lock only when its holder is provably gone: the lock was taken on this
 *   host and its pid is not alive, is a zombie, or is alive with a different start time
 *   (the pid was reused). Age alone never breaks a lock: a holder paused for minutes
 *   (swapped out, stopped in a debugger, its VM suspended) between its etag check and
 *   its rename still holds it, so two casPuts on one etag cannot both succeed. A waiter
 *   gives up after FS_LOCK_WAIT_MS_MAX with STORE_TRANSIENT naming the holder and the
 *   lock file to delete if that process is really gone.
 * - A lock taken on another host is never broken: its process cannot be checked from
 *   here, and the directory store is for one machine. One machine means one hostname and
 *   one pid namespace: containers sharing a directory must keep distinct hostnames (their
 *   default), or a pid from another namespace would look dead.
 * - An unreadable lock (a power loss tore it: the link reached the disk, its content did
 *   not) has no holder that could still check it; it is broken once its file's mtime is
 *   older than FS_LOCK_STALE_MS, so a lock in a format this version cannot parse is
 *   waited for rather than broken at once.
 * - Breakers serialize through a second lock `<lock>.break`, judged by the same rules,
 *   and re-read the lock just before removing it: only the very record they judged is
 *   removed, never a fresh lock taken meanwhile.
 * - A holder re-checks its token (`assertHeld`) immediately before it commits a write.
 *   Breakers never remove a live holder's lock; the check stays as a defense against a
 *   lock file deleted by hand.
 * - Locks serialize check-then-write steps (casPut, delete) only. `create` takes none: it
 *   is `link()`, which fails atomically with EEXIST when the key exists, in any process,
 *   and no locked step makes an absent key present.
 */


/** What a lock file holds, as read. */
type ReadLock =
  | { readonly state: "missing" }
  | { readonly state: "held"; readonly record: ProcessLockRecord }
  | { readonly state: "unreadable"; readonly mtimeMs: number };

type PresentLock = Exclude<ReadLock, { state: "missing" }>;

const MISSING: ReadLock = { state: "missing" };
const TOKEN_BYTES = 16;

export interface HeldLock {
  /** Throws STORE_TRANSIENT if the lock was removed by someone else (nothing was written yet). */
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
        if (!holds(await this.read(lockPath), token)) {
          throw new CairnError("STORE_TRANSIENT", `lock of ${key} was removed while held; nothing was written`, {
            details: { key, lockPath },
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
    // Monotonic: a wall-clock step must neither end the wait early nor stretch it.
    const deadlineMs = this.clock.monotonicMs() + FS_LOCK_WAIT_MS_MAX;
    for (let attempt = 0; ; attempt++) {
      const record = await this.newRecord();
      if (await this.tryCreate(lockPath, record)) return record.token;
      const blocker = await this.breakIfAbandoned(lockPath);
      if (this.clock.monotonicMs() >= deadlineMs) throw lockWaitTimedOut(key, lockPath, blocker);
      if (blocker === null) continue;
      const ceilingMs = Math.min(FS_LOCK_POLL_MS_MAX, 2 ** Math.min(attempt, 8));
      await this.clock.sleep(1 + this.random.float() * ceilingMs);
    }
  }

  /**
   * Removes the lock at `lockPath` if its holder is provably gone. Returns the lock that
   * still blocks the caller, or null when there is none now.
   */
  private async breakIfAbandoned(lockPath: string): Promise<PresentLock | null> {
    const judged = await this.read(lockPath);
    if (judged.state === "missing") return null;
    if (!(await this.isAbandoned(judged))) return judged;
    const breakerPath = `${lockPath}.break`;
    if (!(await this.tryCreate(breakerPath, await this.newRecord()))) {
      await this.breakAbandonedBreaker(breakerPath);
      return judged;
    }
    try {
      const current = await this.read(lockPath);
      if (current.state === "missing") return null;
      if (!sameLock(current, judged)) return current;
      await unlinkIfPresent(lockPath);
      return null;
    } finally {
      await unlinkIfPresent(breakerPath);
    }
  }

  /** A breaker that died inside its few-syscall window would block the key forever. */
  private async breakAbandonedBreaker(breakerPath: string): Promise<void> {
    const breaker = await this.read(breakerPath);
    if (breaker.state === "missing" || !(await this.isAbandoned(breaker))) return;
    if (sameLock(await this.read(breakerPath), breaker)) await unlinkIfPresent(breakerPath);
  }

  private async isAbandoned(lock: PresentLock): Promise<boolean> {
    switch (lock.state) {
      case "held":
        return isHolderGone(lock.record);
      case "unreadable":
        return this.clock.nowMs() - lock.mtimeMs > FS_LOCK_STALE_MS;
    }
  }

  private async release(lockPath: string, token: string): Promise<void> {
    if (holds(await this.read(lockPath), token)) await unlinkIfPresent(lockPath);
  }

  /** Places `record` at `path` unless something is there already. */
  private async tryCreate(path: string, record: ProcessLockRecord): Promise<boolean> {
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
    let handle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (errorCode(error) === "ENOENT") return MISSING;
      throw error;
    }
    try {
      const record = parseProcessLockRecord(await handle.readFile("utf8"));
      if (record !== null) return { state: "held", record };
      return { state: "unreadable", mtimeMs: (await handle.stat()).mtimeMs };
    } finally {
      await handle.close();
    }
  }

  private async newRecord(): Promise<ProcessLockRecord> {
    return {
      ...(await ownProcessIdentity()),
      acquiredAtMs: this.clock.nowMs(),
      token: randomHex(this.random, TOKEN_BYTES),
    };
  }
}

/** Whether the holder of `record` has certainly exited; false whenever it cannot be told. */
function isHolderGone(record: ProcessLockRecord): Promise<boolean> {
  return isProcessGone(record);
}


function holds(lock: ReadLock, token: string): boolean {
  return lock.state === "held" && lock.record.token === token;
}

function sameLock(current: ReadLock, judged: PresentLock): boolean {
  switch (judged.state) {
    case "held":
      return holds(current, judged.record.token);
    case "unreadable":
      return current.state === "unreadable" && current.mtimeMs === judged.mtimeMs;
  }
}

function lockWaitTimedOut(key: string, lockPath: string, blocker: PresentLock | null): CairnError {
  const holder = blocker === null ? "holders that kept changing" : describeHolder(blocker);
  return new CairnError(
    "STORE_TRANSIENT",
    `lock of ${key} still held after ${FS_LOCK_WAIT_MS_MAX} ms by ${holder}; ` +
      `if that process is really gone, delete ${lockPath}`,
    { details: { key, lockPath, holder: blocker?.state === "held" ? blocker.record : blocker } },
  );
}

function describeHolder(lock: PresentLock): string {
  switch (lock.state) {
    case "held": {
      const { pid, hostname: host, acquiredAtMs } = lock.record;
      const where = host === hostname() ? `host ${host}` : `host ${host} (another host: never broken automatically)`;
      return `pid ${pid} on ${where} since ${isoTime(acquiredAtMs)}`;
    }
    case "unreadable":
      return `an unreadable lock file last written at ${isoTime(lock.mtimeMs)}`;
  }
}

function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms` : date.toISOString();
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
