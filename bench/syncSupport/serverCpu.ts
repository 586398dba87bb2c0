import { setTimeout as sleep } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import type { SyncStats } from "../../src/sync/index.js";
import { round } from "../kit/LatencySummary.js";
import type { ServeAdminStatus, ServeChild } from "../kit/ServeChild.js";

/**
 * The server's own CPU over windows of work, read from its /api/admin/status before and
 * after each (a read costs it well under a millisecond). A window also carries the
 * server's background work — lease renewals, the session sweep every second, pings,
 * metrics collectors, ~10–15 ms/s, i.e. ~0.6 ms of a 50 ms commit — so each figure is
 * also given net of the idle rate measured beside it.
 *
 * Per-commit CPU jitters (a 20-commit block's mean by ±0.7 ms) and drifts (down by ~2 ms
 * over the server's first minutes), so work is measured in blocks: a figure carries
 * ± 2 standard errors over its blocks, and a difference is best taken between blocks
 * that alternate (`pairedDifference`), which cancels the drift.
 */
export interface CpuWindow {
  readonly commits: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly cpuMsPerCommit: number;
  /** (cpuMs − idle rate × wallMs) / commits. */
  readonly netCpuMsPerCommit: number;
  /** 2 standard errors of netCpuMsPerCommit over the blocks measured (NaN for one block). */
  readonly netCpuMsPerCommitError: number;
  /** Sync counters' growth per commit (Transitions produced, shared query runs reused and made). */
  readonly transitionsPerCommit: number;
  readonly sharedRunHitsPerCommit: number;
  readonly sharedRunMissesPerCommit: number;
  /** QueryDiff modifications sent per commit (results moved by the commit's documents, no run). */
  readonly queryDiffsPerCommit: number;
}

/** A difference of net CPU per commit, ± 2 standard errors. */
export interface CpuDifference {
  readonly ms: number;
  readonly errorMs: number;
}

/**
 * Server CPU ms per second of wall time while nothing is asked of it: the median over
 * one-second slices, so a burst of work a previous window left behind (a fold of the
 * local overlay, a GC) does not count as background.
 */
export async function idleCpuMsPerSecond(server: ServeChild, seconds: number): Promise<number> {
  const rates: number[] = [];
  let previous = await sample(server);
  for (let slice = 0; slice < seconds; slice++) {
    await sleep(1000);
    const next = await sample(server);
    rates.push((cpuMsOf(next.status) - cpuMsOf(previous.status)) / ((next.atMs - previous.atMs) / 1000));
    previous = next;
  }
  rates.sort((a, b) => a - b);
  return round(rates[Math.floor(rates.length / 2)] ?? Number.NaN, 3);
}

/**
 * Runs `commits` in blocks of at most `blockCommits`, a measured block and a control
 * block per pair, alternating which goes first (ABBA), so the server's drift over the
 * run falls on both alike.
 */
export async function alternatingBlocks(commits: number, blockCommits: number, measure: (block: number) => Promise<void>, control: (block: number) => Promise<void>): Promise<void> {
  for (let done = 0, pair = 0; done < commits; done += blockCommits, pair++) {
    const block = Math.min(blockCommits, commits - done);
    if (pair % 2 === 0) {
      await measure(block);
      await control(block);
    } else {
      await control(block);
      await measure(block);
    }
  }
}

/** Runs `commits` commits through `run` and reports the server CPU they took. */
export async function cpuWindow(server: ServeChild, commits: number, idleCpuMsPerS: number, run: () => Promise<void>): Promise<CpuWindow> {
  const before = await sample(server);
  await run();
  const after = await sample(server);
  const growth = (read: (stats: SyncStats) => number) => read(after.status.sync) - read(before.status.sync);
  return windowOf(
    {
      commits,
      wallMs: after.atMs - before.atMs,
      cpuMs: cpuMsOf(after.status) - cpuMsOf(before.status),
      transitions: growth((stats) => stats.transitionsCommitted),
      sharedRunHits: growth((stats) => stats.sharedRunHits),
      sharedRunMisses: growth((stats) => stats.sharedRunMisses),
      queryDiffs: growth((stats) => stats.queryDiffs),
    },
    idleCpuMsPerS,
    Number.NaN,
  );
}

/** Blocks of the same kind of commit as one window, with the error of their mean. */
export function mergeWindows(blocks: readonly CpuWindow[], idleCpuMsPerS: number): CpuWindow {
  const sum = (read: (window: CpuWindow) => number) => blocks.reduce((total, window) => total + read(window), 0);
  return windowOf(
    {
      commits: sum((window) => window.commits),
      wallMs: sum((window) => window.wallMs),
      cpuMs: sum((window) => window.cpuMs),
      transitions: sum((window) => window.transitionsPerCommit * window.commits),
      sharedRunHits: sum((window) => window.sharedRunHitsPerCommit * window.commits),
      sharedRunMisses: sum((window) => window.sharedRunMissesPerCommit * window.commits),
      queryDiffs: sum((window) => window.queryDiffsPerCommit * window.commits),
    },
    idleCpuMsPerS,
    twoStandardErrors(blocks.map((window) => window.netCpuMsPerCommit)),
  );
}

/** Net CPU per commit of `measured` beyond `control`, blocks taken in alternation (block i of each side by side). */
export function pairedDifference(measured: readonly CpuWindow[], control: readonly CpuWindow[], idleCpuMsPerS: number): CpuDifference {
  const ms = mergeWindows(measured, idleCpuMsPerS).netCpuMsPerCommit - mergeWindows(control, idleCpuMsPerS).netCpuMsPerCommit;
  const differences = measured.map((window, at) => window.netCpuMsPerCommit - control[at]!.netCpuMsPerCommit);
  return { ms: round(ms, 3), errorMs: round(twoStandardErrors(differences), 3) };
}

/** Net CPU per commit of `measured` beyond `reference`, measured at different times. */
export function independentDifference(measured: CpuWindow, reference: CpuWindow): CpuDifference {
  return {
    ms: round(measured.netCpuMsPerCommit - reference.netCpuMsPerCommit, 3),
    errorMs: round(Math.hypot(measured.netCpuMsPerCommitError, reference.netCpuMsPerCommitError), 3),
  };
}

interface WindowTotals {
  readonly commits: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly transitions: number;
  readonly sharedRunHits: number;
  readonly sharedRunMisses: number;
  readonly queryDiffs: number;
}

function windowOf(totals: WindowTotals, idleCpuMsPerS: number, errorMs: number): CpuWindow {
  const { commits, wallMs, cpuMs } = totals;
  return {
    commits,
    wallMs: round(wallMs, 1),
    cpuMs: round(cpuMs, 1),
    cpuMsPerCommit: round(cpuMs / commits, 3),
    netCpuMsPerCommit: round((cpuMs - (idleCpuMsPerS * wallMs) / 1000) / commits, 3),
    netCpuMsPerCommitError: round(errorMs, 3),
    transitionsPerCommit: round(totals.transitions / commits, 3),
    sharedRunHitsPerCommit: round(totals.sharedRunHits / commits, 3),
    sharedRunMissesPerCommit: round(totals.sharedRunMisses / commits, 3),
    queryDiffsPerCommit: round(totals.queryDiffs / commits, 3),
  };
}

/** 2 × the standard error of the mean of `values` (NaN for fewer than two). */
function twoStandardErrors(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  const mean = values.reduce((total, value) => total + value, 0) / values.length;
  const variance = values.reduce((total, value) => total + (value - mean) ** 2, 0) / (values.length - 1);
  return 2 * Math.sqrt(variance / values.length);
}

/** The server's status and when it was read (performance.now(), ms). */
export async function sample(server: ServeChild): Promise<{ readonly status: ServeAdminStatus; readonly atMs: number }> {
  const status = await server.adminStatus();
  return { status, atMs: performance.now() };
}

/** The server process's CPU time (user + system) so far, ms. */
export function cpuMsOf(status: ServeAdminStatus): number {
  return (status.process.cpuUserUs + status.process.cpuSystemUs) / 1000;
}
