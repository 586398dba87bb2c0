import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { throttled, type Progress } from "../kit/progress.js";
import { JOBS_COUNTED_MAX } from "./platformBenchApp.js";
import { watchNodeActivity, type NodeActivity } from "./nodeActivity.js";
import type { PlatformNode } from "./PlatformNode.js";

/** The load: every `slotMs` one mutation schedules the slot's jobs, due `leadMs` later, spread evenly over the slot. */
export interface SchedulerLoad {
  readonly jobsPerSecond: number;
  readonly seconds: number;
  readonly slotMs: number;
  readonly leadMs: number;
}

export interface LatenessWindow {
  /** Seconds from the first job's due time (by due time). */
  readonly fromSeconds: number;
  readonly toSeconds: number;
  readonly lateness: LatencySummary;
}

export interface SchedulerFigures {
  readonly load: SchedulerLoad;
  readonly jobsPerSlot: number;
  readonly scheduled: number;
  /** Ticks recorded (each job's mutation commits exactly once). */
  readonly ran: number;
  /** Pending and failed jobs when the benchmark stopped waiting (each counted up to JOBS_COUNTED_MAX). */
  readonly pendingAtEnd: number;
  readonly failedAtEnd: number;
  /** Every job ran (how late the last did: lastStartedAfterLastDueMs). */
  readonly allRan: boolean;
  /** due → started (`ctx.now()` in the tick − its due time), every job. */
  readonly lateness: LatencySummary;
  /** The same by WINDOW_SECONDS of due time: a runner falling behind shows as a growing lateness. */
  readonly windows: readonly LatenessWindow[];
  /** The last job's start − the last due time. */
  readonly lastStartedAfterLastDueMs: number;
  /** When the benchmark saw no job pending, after the last due time (polled every POLL_MS). */
  readonly drainedAfterLastDueMs: number | null;
  /** The scheduling mutation: send → answer over HTTP. */
  readonly scheduleCall: LatencySummary;
  /** How late the load generator sent its mutations (its own timer's lateness; a big one would be the generator's fault, not the node's). */
  readonly sendLateMsMax: number;
  /** Jobs started a second from the first start to the last (1,000 when the runner keeps pace over the whole run). */
  readonly startsPerSecond: number;
  /** The node from the first scheduling mutation until no job was pending. */
  readonly activity: NodeActivity;
  readonly bucket: { readonly objects: number; readonly bytes: number };
}

const WINDOW_SECONDS = 5;
const POLL_MS = 50;
/** How long after the last due time the benchmark waits for the jobs before it reports them as not run. */
const DRAIN_WAIT_MS = 60_000;
const TICKS_PAGE = 4_096;
const PROGRESS_INTERVAL_MS = 5_000;

/**
 * Phase 1: scheduler lateness. An open loop (never waiting for answers) sends one
 * `bench:schedule` mutation over HTTP every `slotMs`, scheduling `jobsPerSecond × slotMs /
 * 1000` `bench:tick` jobs with `runAt`, due `leadMs` after the slot's start and spread
 * evenly inside the slot, so that `jobsPerSecond` jobs come due each second for `seconds`.
 * Each tick records `ctx.now() − dueMs`. Then it waits until no job is pending, and reads
 * every tick back.
 */
export async function measureSchedulerLateness(node: PlatformNode, load: SchedulerLoad, progress: Progress): Promise<SchedulerFigures> {
  const slots = Math.round((load.seconds * 1000) / load.slotMs);
  const jobsPerSlot = Math.round((load.jobsPerSecond * load.slotMs) / 1000);
  if (jobsPerSlot < 1 || jobsPerSlot > 1_000) throw new CairnError("INVALID_ARGUMENT", `${jobsPerSlot} jobs per mutation: a call schedules 1 to 1,000`);
  const soFar = throttled(progress, PROGRESS_INTERVAL_MS);
  const callMs: number[] = [];
  const failures: string[] = [];
  let sendLateMsMax = 0;
  const startedPerf = performance.now();
  const startedWall = Date.now();
  const firstDueMs = startedWall + load.leadMs;
  const lastDueMs = firstDueMs + (slots - 1) * load.slotMs + ((jobsPerSlot - 1) * load.slotMs) / jobsPerSlot;
  const calls: Promise<void>[] = [];
  const activity = await watchNodeActivity(node.url, node.pid);
  for (let slot = 0; slot < slots; slot++) {
    const sendAt = startedPerf + slot * load.slotMs;
    const waitMs = sendAt - performance.now();
    if (waitMs > 1) await sleep(waitMs);
    sendLateMsMax = Math.max(sendLateMsMax, performance.now() - sendAt);
    const slotDueMs = firstDueMs + slot * load.slotMs;
    const dueMs = Array.from({ length: jobsPerSlot }, (_, job) => slotDueMs + (job * load.slotMs) / jobsPerSlot);
    const sent = performance.now();
    calls.push(
      node.call("mutation", "bench:schedule", { dueMs }).then(
        () => void callMs.push(performance.now() - sent),
        (error: unknown) => void failures.push(String(error)),
      ),
    );
    soFar(`   ${((slot + 1) * jobsPerSlot).toLocaleString("en-US")} jobs scheduled, ${callMs.length} of ${slot + 1} scheduling mutations answered…`);
  }
  await Promise.all(calls);
  if (failures.length > 0) throw new CairnError("INTERNAL", `${failures.length} scheduling mutation(s) failed; the first: ${failures[0]}`);
  const scheduled = slots * jobsPerSlot;
  progress(`   all ${scheduled.toLocaleString("en-US")} jobs scheduled; waiting for the last to run…`);

  // Waits for the last due time, then polls until no job is pending.
  const untilLastDue = lastDueMs - Date.now();
  if (untilLastDue > 0) await sleep(untilLastDue);
  let pending = await countJobs(node, "pending");
  let drainedAfterLastDueMs: number | null = pending === 0 ? Math.max(0, Date.now() - lastDueMs) : null;
  while (pending > 0 && Date.now() - lastDueMs < DRAIN_WAIT_MS) {
    await sleep(POLL_MS);
    pending = await countJobs(node, "pending");
    if (pending === 0) drainedAfterLastDueMs = Date.now() - lastDueMs;
    else soFar(`   ${pending >= JOBS_COUNTED_MAX ? `≥ ${JOBS_COUNTED_MAX}` : pending} jobs still pending ${round((Date.now() - lastDueMs) / 1000, 1)} s after the last was due…`);
  }
  const nodeActivity = await activity.end();
  const failed = await countJobs(node, "failed");

  const ticks = await readTicks(node);
  const lateness = ticks.map(([due, started]) => started - due);
  const lastStarted = ticks.reduce((latest, [, started]) => Math.max(latest, started), Number.NEGATIVE_INFINITY);
  const firstStarted = ticks.reduce((earliest, [, started]) => Math.min(earliest, started), Number.POSITIVE_INFINITY);
  const windows: LatenessWindow[] = [];
  for (let from = 0; from * 1000 < lastDueMs - firstDueMs + 1; from += WINDOW_SECONDS) {
    const inWindow = ticks.filter(([due]) => due - firstDueMs >= from * 1000 && due - firstDueMs < (from + WINDOW_SECONDS) * 1000).map(([due, started]) => started - due);
    windows.push({ fromSeconds: from, toSeconds: from + WINDOW_SECONDS, lateness: summarizeLatencies(inWindow) });
  }
  return {
    load,
    jobsPerSlot,
    scheduled,
    ran: ticks.length,
    pendingAtEnd: pending,
    failedAtEnd: failed,
    allRan: ticks.length === scheduled && pending === 0,
    lateness: summarizeLatencies(lateness),
    windows,
    lastStartedAfterLastDueMs: round(lastStarted - lastDueMs),
    drainedAfterLastDueMs: drainedAfterLastDueMs === null ? null : round(drainedAfterLastDueMs),
    scheduleCall: summarizeLatencies(callMs),
    sendLateMsMax: round(sendLateMsMax),
    startsPerSecond: Math.round(ticks.length / ((lastStarted - firstStarted) / 1000)),
    activity: nodeActivity,
    bucket: await node.bucketSize(),
  };
}

async function countJobs(node: PlatformNode, state: string): Promise<number> {
  return (await node.call("query", "bench:jobsIn", { state })) as number;
}

/** Every tick as [dueMs, startedMs], a page at a time. */
async function readTicks(node: PlatformNode): Promise<[number, number][]> {
  const ticks: [number, number][] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = (await node.call("query", "bench:ticksPage", { paginationOpts: { cursor, numItems: TICKS_PAGE } })) as {
      page: [number, number][];
      isDone: boolean;
      continueCursor: string;
    };
    ticks.push(...page.page);
    if (page.isDone) return ticks;
    cursor = page.continueCursor;
  }
}
