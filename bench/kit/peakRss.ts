import { readFileSync, writeFileSync } from "node:fs";

/**
 * A process's peak resident set as the kernel keeps it: VmHWM in /proc/<pid>/status
 * (Linux), the high-water mark of its RSS since it started or since the mark was last
 * reset. Unlike sampling `process.memoryUsage().rss`, it misses no peak between samples,
 * and it counts every thread (SQLite's, the fold and checkpoint workers') and native
 * memory alike. A benchmark reads its own ("self") or a child's (by pid).
 */
export type ProcessRef = number | "self";

/** VmHWM of the process in bytes; null once it has exited (or where /proc has no such field). */
export function peakRssBytes(pid: ProcessRef = "self"): number | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return null;
  }
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return match === null ? null : Number(match[1]) * 1024;
}

/**
 * Resets the process's high-water mark to its current RSS (5 written to
 * /proc/<pid>/clear_refs, Linux ≥ 4.0), so that the next reading is one phase's own peak.
 * False where that is not allowed (a read-only /proc, another user's process): readings
 * then run from the process's start.
 */
export function resetPeakRss(pid: ProcessRef = "self"): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** How often a child's VmHWM is read while it runs. */
const WATCH_INTERVAL_MS = 100;

/**
 * A child's VmHWM, read every WATCH_INTERVAL_MS while it runs: once it exits, /proc keeps
 * no entry for it, so the last reading is the figure (a rise in its last interval is
 * missed). `stop` ends the readings and returns the highest, in bytes (0: none was read).
 */
export function watchPeakRss(pid: number): { readonly stop: () => number } {
  let highestBytes = 0;
  const read = () => {
    highestBytes = Math.max(highestBytes, peakRssBytes(pid) ?? 0);
  };
  const timer = setInterval(read, WATCH_INTERVAL_MS);
  read();
  return {
    stop: () => {
      read();
      clearInterval(timer);
      return highestBytes;
    },
  };
}
