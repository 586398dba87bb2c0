import { readFile } from "node:fs/promises";
import { hostname } from "node:os";

/**
 * Whether a process named in a lock file is still there, for the lock files of this
 * machine (the directory store's key locks, a local directory's lock). A process is
 * named by its pid, its host and its start time: a pid alone may have been reused by a
 * later process.
 */
export interface ProcessIdentity {
  readonly pid: number;
  readonly hostname: string;
  /**
   * When the process started, to tell it from a later process that reused its pid:
   * field 22 (`starttime`, clock ticks after boot) of /proc/<pid>/stat on Linux; null
   * where there is no /proc.
   */
  readonly processStartTime: string | null;
}

/** What a lock file of this machine holds: its holder, when it took it, and its token. */
export interface ProcessLockRecord extends ProcessIdentity {
  readonly acquiredAtMs: number;
  readonly token: string;
}

/** A lock file's text as a record; null for a torn or foreign file. */
export function parseProcessLockRecord(text: string): ProcessLockRecord | null {
  try {
    const value = JSON.parse(text) as Partial<ProcessLockRecord>;
    if (
      Number.isSafeInteger(value.pid) &&
      (value.pid as number) > 0 &&
      typeof value.hostname === "string" &&
      (value.processStartTime === null || typeof value.processStartTime === "string") &&
      Number.isFinite(value.acquiredAtMs) &&
      typeof value.token === "string"
    ) {
      return {
        pid: value.pid as number,
        hostname: value.hostname,
        processStartTime: value.processStartTime,
        acquiredAtMs: value.acquiredAtMs as number,
        token: value.token,
      };
    }
  } catch {
    // fall through: a torn or foreign file
  }
  return null;
}

/** Fields of /proc/<pid>/stat, counted from field 3 (the first after `(comm)`). */
const STAT_STATE_INDEX = 3 - 3;
const STAT_START_TIME_INDEX = 22 - 3;
/** Process states of a process that exited and will never run again (zombie, dead). */
const EXITED_STATES = new Set(["Z", "X", "x"]);

/** This process, as a lock file names it. */
export async function ownProcessIdentity(): Promise<ProcessIdentity> {
  return { pid: process.pid, hostname: hostname(), processStartTime: await ownProcessStartTime() };
}

/**
 * Whether the process `identity` names has certainly exited; false whenever it cannot be
 * told (another host: its processes cannot be checked from here).
 */
export async function isProcessGone(identity: ProcessIdentity): Promise<boolean> {
  if (identity.hostname !== hostname()) return false;
  if (!isProcessAlive(identity.pid)) return true;
  const status = await processStatus(identity.pid);
  if (status === null) return false;
  // A zombie still answers kill(pid, 0) until its parent reaps it, but never runs again.
  if (EXITED_STATES.has(status.state)) return true;
  return identity.processStartTime !== null && status.startTime !== identity.processStartTime;
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The start time of process `pid` (field 22 of /proc/<pid>/stat), or null where /proc
 * does not exist or the process is gone. Two processes that share a pid never share it.
 */
export async function processStartTime(pid: number): Promise<string | null> {
  return (await processStatus(pid))?.startTime ?? null;
}

/** State (field 3) and start time (field 22) of process `pid`, from /proc; null without one. */
async function processStatus(pid: number): Promise<{ state: string; startTime: string } | null> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) is parenthesized and may itself hold spaces and ")".
  const fields = text.slice(text.lastIndexOf(")") + 1).trim().split(" ");
  const state = fields[STAT_STATE_INDEX];
  const startTime = fields[STAT_START_TIME_INDEX];
  if (state === undefined || startTime === undefined || !/^[0-9]+$/.test(startTime)) return null;
  return { state, startTime };
}

let ownStartTime: Promise<string | null> | undefined;

function ownProcessStartTime(): Promise<string | null> {
  ownStartTime ??= processStartTime(process.pid);
  return ownStartTime;
}
