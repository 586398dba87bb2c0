import { link, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { CairnError, randomHex, type Clock, type Random } from "../base/index.js";
import { isProcessGone, ownProcessIdentity, parseProcessLockRecord, type ProcessLockRecord } from "./processLiveness.js";

/**
 * A file that says one process uses a directory (a node's local directory: its SQLite
 * files and node id) for as long as it runs.
 *
 * Invariants:
 * - The file holds `{pid, hostname, processStartTime, acquiredAtMs, token}` and appears
 *   complete or not at all: it is written to a temporary file and `link()`ed into place,
 *   which fails with EEXIST while another holder's file is there.
 * - A holder's file is removed only by the holder (matching token), or by a later
 *   process once its holder is provably gone (processLiveness: same host, and the pid
 *   exited or now belongs to a later process), so a crashed or SIGKILLed holder never
 *   blocks the next start. A live holder, a holder on another host or a file this
 *   version cannot read is never taken over: the caller gets LOCAL_DIRECTORY_LOCKED
 *   naming it, and what to delete if it is really gone.
 * - Takers of an abandoned file serialize through `<path>.break`, itself a lock file of
 *   the same kind, and re-read the file just before removing it: only the very record
 *   they judged is removed, never a fresh one taken meanwhile.
 */

const TOKEN_BYTES = 16;
/** Takeovers of an abandoned file tried before giving up (each one removes a dead holder's file). */
const TAKEOVER_ATTEMPTS_MAX = 4;

export class ProcessLockFile {
  private constructor(
    readonly path: string,
    private readonly token: string,
  ) {}

  /**
   * Takes the lock file at `path` for this process; LOCAL_DIRECTORY_LOCKED naming the
   * holder if a live process (or one that cannot be judged) holds it. `what` names the
   * directory in messages ("local directory /var/cairn").
   */
  static async acquire(path: string, what: string, options: { readonly clock: Clock; readonly random: Random }): Promise<ProcessLockFile> {
    await mkdir(dirname(path), { recursive: true });
    for (let attempt = 1; ; attempt++) {
      const record: ProcessLockRecord = { ...(await ownProcessIdentity()), acquiredAtMs: options.clock.nowMs(), token: randomHex(options.random, TOKEN_BYTES) };
      if (await tryCreate(path, record)) return new ProcessLockFile(path, record.token);
      const holder = await readRecord(path);
      if (holder === "missing") continue;
      if (holder === "unreadable" || !(await isProcessGone(holder)) || attempt >= TAKEOVER_ATTEMPTS_MAX) throw locked(path, what, holder);
      await removeIfStill(path, holder, options.random);
    }
  }

  /** Removes the file if this process still holds it. */
  async release(): Promise<void> {
    const current = await readRecord(this.path);
    if (typeof current === "object" && current.token === this.token) await unlinkIfPresent(this.path);
  }
}

/** Removes `judged`'s file at `path` unless another taker is at it or a fresh holder replaced it. */
async function removeIfStill(path: string, judged: ProcessLockRecord, random: Random): Promise<void> {
  const breakerPath = `${path}.break`;
  const breaker: ProcessLockRecord = { ...(await ownProcessIdentity()), acquiredAtMs: 0, token: randomHex(random, TOKEN_BYTES) };
  if (!(await tryCreate(breakerPath, breaker))) {
    // Another taker is at it, or one died inside its few-syscall window: clear that one's file.
    const other = await readRecord(breakerPath);
    if (typeof other === "object" && (await isProcessGone(other))) await unlinkIfPresent(breakerPath);
    return;
  }
  try {
    const current = await readRecord(path);
    if (typeof current === "object" && current.token === judged.token) await unlinkIfPresent(path);
  } finally {
    await unlinkIfPresent(breakerPath);
  }
}

async function tryCreate(path: string, record: ProcessLockRecord): Promise<boolean> {
  const temporaryPath = `${path}.${record.token}.tmp`;
  await writeFile(temporaryPath, JSON.stringify(record), { flag: "wx" });
  try {
    await link(temporaryPath, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlinkIfPresent(temporaryPath);
  }
}

async function readRecord(path: string): Promise<ProcessLockRecord | "missing" | "unreadable"> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw error;
  }
  return parseProcessLockRecord(text) ?? "unreadable";
}

function locked(path: string, what: string, holder: ProcessLockRecord | "unreadable"): CairnError {
  if (holder === "unreadable") {
    return new CairnError("LOCAL_DIRECTORY_LOCKED", `${what} is locked by ${path}, which this version cannot read; if no process uses the directory, delete that file`, {
      details: { path },
    });
  }
  const since = new Date(holder.acquiredAtMs);
  const when = Number.isNaN(since.getTime()) ? "" : ` since ${since.toISOString()}`;
  return new CairnError(
    "LOCAL_DIRECTORY_LOCKED",
    `${what} is in use by process ${holder.pid} on host ${holder.hostname}${when}: stop it first, or give this one another --local directory ` +
      `(if that process is really gone, delete ${path})`,
    { details: { path, pid: holder.pid, hostname: holder.hostname } },
  );
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
