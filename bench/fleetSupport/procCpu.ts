import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * CPU time from /proc (Linux): a process's user + system time, all its threads (the
 * engine's fold and checkpoint workers included), and the whole machine's busy and total
 * time, so a window's figures come from the kernel rather than from the measured process.
 */
const CLOCK_TICKS_PER_S = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** utime + stime of `pid` in ms, or null once it has exited. */
export function processCpuMs(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces), from field 3 (state) on: utime is field 14, stime 15.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}

/** The machine's CPU time so far, in ms summed over its cores: busy (everything but idle and iowait) and total. */
export interface MachineCpu {
  readonly busyMs: number;
  readonly totalMs: number;
}

export function machineCpu(): MachineCpu {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((sum, value) => sum + value, 0);
  const idle = ticks[3]! + ticks[4]!;
  return { busyMs: ((total - idle) * 1000) / CLOCK_TICKS_PER_S, totalMs: (total * 1000) / CLOCK_TICKS_PER_S };
}
