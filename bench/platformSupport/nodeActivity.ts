import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { round } from "../kit/LatencySummary.js";
import { machineCpu, processCpuMs } from "../fleetSupport/procCpu.js";

/** Running totals of the node's Prometheus metrics (GET /metrics) that say how its commits went. */
interface CommitTotals {
  readonly commits: number;
  readonly dataFlushes: number;
  readonly flushUnits: number;
  readonly flushes: number;
  readonly flushSeconds: number;
}

/** What the node did over a window: its commits and group-commit flushes (from /metrics) and its CPU (from /proc). */
export interface NodeActivity {
  readonly seconds: number;
  /** Mutations committed a second (scheduled jobs, scheduling mutations, everything). */
  readonly commitsPerSecond: number;
  /** Data segments (group-commit batches) a second, their mean units, and the mean flush (segment created → durable). */
  readonly flushesPerSecond: number;
  readonly unitsPerFlush: number;
  readonly flushMsMean: number;
  /** The node process's CPU (all its threads), in cores. */
  readonly nodeCores: number;
  /** The whole machine's busy CPU (the benchmark and every child included), in cores, and the cores it has. */
  readonly machineBusyCores: number;
  readonly machineCores: number;
}

/** Starts a window of the node's activity; `end()` reads it. */
export async function watchNodeActivity(url: string, pid: number): Promise<{ readonly end: () => Promise<NodeActivity> }> {
  const startedMs = performance.now();
  const totals = await commitTotals(url);
  const nodeCpu = processCpuMs(pid) ?? 0;
  const machine = machineCpu();
  return {
    end: async () => {
      const seconds = (performance.now() - startedMs) / 1000;
      const now = await commitTotals(url);
      const machineNow = machineCpu();
      const dataFlushes = now.dataFlushes - totals.dataFlushes;
      const flushes = now.flushes - totals.flushes;
      const wallMs = seconds * 1000;
      return {
        seconds: round(seconds, 1),
        commitsPerSecond: Math.round((now.commits - totals.commits) / seconds),
        flushesPerSecond: round(dataFlushes / seconds, 1),
        unitsPerFlush: round((now.flushUnits - totals.flushUnits) / Math.max(1, dataFlushes), 1),
        flushMsMean: round(((now.flushSeconds - totals.flushSeconds) * 1000) / Math.max(1, flushes), 1),
        nodeCores: round(((processCpuMs(pid) ?? nodeCpu) - nodeCpu) / wallMs, 2),
        machineBusyCores: round((machineNow.busyMs - machine.busyMs) / wallMs, 2),
        machineCores: round((machineNow.totalMs - machine.totalMs) / wallMs, 1),
      };
    },
  };
}

async function commitTotals(url: string): Promise<CommitTotals> {
  const response = await fetch(`${url}metrics`, { signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new CairnError("INTERNAL", `GET /metrics answered ${response.status}`);
  const text = await response.text();
  /** The sum of a metric's samples (every label set) whose line starts with `name` followed by `{` or a space. */
  const total = (name: string) =>
    text
      .split("\n")
      .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  return {
    commits: total("cairn_commits_total"),
    dataFlushes: total("cairn_flush_units_count"),
    flushUnits: total("cairn_flush_units_sum"),
    flushes: total("cairn_flush_duration_seconds_count"),
    flushSeconds: total("cairn_flush_duration_seconds_sum"),
  };
}
