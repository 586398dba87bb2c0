import { summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import type { BenchSocket } from "./BenchSocket.js";
import type { ClientFleet } from "./ClientFleet.js";
import { primeCounter, sequentialBumps, type BumpTiming, type KnownCounter } from "./sequentialBumps.js";
import { alternatingBlocks, cpuWindow, idleCpuMsPerSecond, independentDifference, mergeWindows, pairedDifference, type CpuDifference, type CpuWindow } from "./serverCpu.js";
import type { ServeChild } from "../kit/ServeChild.js";

/** A commit's own cost: server CPU per bump of a counter nobody subscribes to, before any client connects. */
export interface BaselineFigures {
  readonly idleCpuMsPerSecond: number;
  readonly cpu: CpuWindow;
}

export interface FanOutFigures {
  /** Subscriptions each commit affects. */
  readonly affected: number;
  /** Mutator's send → the last affected subscriber's onUpdate with the new value. */
  readonly latency: LatencySummary;
  readonly idleCpuMsPerSecond: number;
  readonly cpu: CpuWindow;
  /** Bumps of the unsubscribed baseline counter, in blocks alternating with the measured ones (clients connected). */
  readonly control: CpuWindow;
  /** Net CPU per commit beyond the alternating control's: the fan-out's own cost, free of drift. */
  readonly overControl: CpuDifference;
  /** Net CPU per commit beyond the baseline measured before the clients connected (drift included). */
  readonly overBaseline: CpuDifference;
}

/** How long the server is left alone to measure its idle CPU rate: five one-second slices, each spanning one session sweep. */
export const IDLE_WINDOW_SECONDS = 5;
/** Commits per block: blocks alternate measured/control, short enough that drift within a pair is small, long enough to amortize the two status reads. */
export const BLOCK_COMMITS = 10;

/** Bumps of a counter nobody subscribes to, sequential, in blocks, from the raw mutator (the caller opens the fleet after this). */
export async function measureBaseline(server: ServeChild, mutator: BenchSocket, commits: number, warmups: number): Promise<BaselineFigures> {
  const counter = await primeCounter(mutator, "baseline");
  await sequentialBumps(mutator, counter, warmups);
  const idle = await idleCpuMsPerSecond(server, IDLE_WINDOW_SECONDS);
  const blocks: CpuWindow[] = [];
  for (let done = 0; done < commits; done += BLOCK_COMMITS) {
    const block = Math.min(BLOCK_COMMITS, commits - done);
    blocks.push(await cpuWindow(server, block, idle, async () => void (await sequentialBumps(mutator, counter, block))));
  }
  return { idleCpuMsPerSecond: idle, cpu: mergeWindows(blocks, idle) };
}

/**
 * `commits` sequential bumps of counter `name`, each awaited until all `affected` fleet
 * subscriptions labelled `name` show the new value (after `warmups` alike). They run
 * in blocks of BLOCK_COMMITS, each pair of blocks with one of as many bumps of the
 * unsubscribed baseline counter, in the order measured-control, control-measured, … so
 * that a linear drift cancels too.
 */
export async function measureFanOut(
  server: ServeChild,
  mutator: BenchSocket,
  fleet: ClientFleet,
  name: string,
  affected: number,
  { commits, warmups, baseline }: { commits: number; warmups: number; baseline: BaselineFigures },
): Promise<FanOutFigures> {
  const counter = await primeCounter(mutator, name);
  const control: KnownCounter = await primeCounter(mutator, "baseline");
  const seen = (expected: number) => fleet.watch(name, expected, affected);
  await sequentialBumps(mutator, counter, warmups, seen);
  const idle = await idleCpuMsPerSecond(server, IDLE_WINDOW_SECONDS);
  const timings: BumpTiming[] = [];
  const measuredBlocks: CpuWindow[] = [];
  const controlBlocks: CpuWindow[] = [];
  await alternatingBlocks(
    commits,
    BLOCK_COMMITS,
    async (block) => void measuredBlocks.push(await cpuWindow(server, block, idle, async () => void timings.push(...(await sequentialBumps(mutator, counter, block, seen))))),
    async (block) => void controlBlocks.push(await cpuWindow(server, block, idle, async () => void (await sequentialBumps(mutator, control, block)))),
  );
  fleet.checkHealthy();
  const cpu = mergeWindows(measuredBlocks, idle);
  return {
    affected,
    latency: summarizeLatencies(timings.map((timing) => timing.seenMs!)),
    idleCpuMsPerSecond: idle,
    cpu,
    control: mergeWindows(controlBlocks, idle),
    overControl: pairedDifference(measuredBlocks, controlBlocks, idle),
    overBaseline: independentDifference(cpu, baseline.cpu),
  };
}
