import { setTimeout as sleep } from "node:timers/promises";
import type { Random } from "../../src/base/random.js";
import type { WakeHintStats } from "../../src/fleet/WakeHintSender.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { BenchSocket, updatedValue } from "../syncSupport/BenchSocket.js";
import { primeCounter, sequentialBumps, type BumpTiming } from "../syncSupport/sequentialBumps.js";
import type { NodePair } from "./NodePair.js";

export interface ReplicaLatencyOptions {
  readonly samples: number;
  readonly warmups: number;
  readonly spacingMinMs: number;
  readonly spacingMaxMs: number;
  readonly random: Random;
  readonly progress: (message: string) => void;
}

export interface ReplicaLatencyFigures {
  readonly wakeHints: boolean;
  readonly samples: number;
  /** B (on the writer): send → MutationResponse. */
  readonly commit: LatencySummary;
  /** B's send → A's (on the replica) Transition carrying the new value. */
  readonly transition: LatencySummary;
  /** transition p50 − commit p50. */
  readonly p50DifferenceMs: number;
  /** Mean pause before a bump, as drawn. */
  readonly meanSpacingMs: number;
  /** The writer's wake-hint counters over the measured bumps (null: it sends none). */
  readonly hints: WakeHintStats | null;
}

/** Progress lines every this many samples. */
const PROGRESS_EVERY_SAMPLES = 25;

/**
 * Phase 1 for one pair: raw protocol client A on the replica subscribes to
 * `counters:get {name: "latency"}`; raw client B on the writer bumps that counter, one
 * bump at a time, each after a random pause counted from when A saw the previous one (so
 * the replica's tailer is wherever a quiet minute leaves it, not polling right after a
 * hit). Each sample times B's send against B's MutationResponse and against A's
 * Transition with the new value.
 */
export async function measureReplicaLatency(pair: NodePair, label: string, options: ReplicaLatencyOptions): Promise<ReplicaLatencyFigures> {
  const writer = await BenchSocket.connect(pair.writer.syncUrl);
  const reader = await BenchSocket.connect(pair.replica.syncUrl);
  try {
    const counter = await primeCounter(writer, "latency");
    const { queryId } = await reader.subscribe("counters:get", { name: "latency" });
    const seen = (expected: number) => reader.expect((message) => updatedValue(message, queryId) === expected).then((frame) => frame.atMs);
    const spacings: number[] = [];
    const bumps = async (count: number, onSample?: (done: number, timings: readonly BumpTiming[]) => void) => {
      const timings: BumpTiming[] = [];
      for (let n = 0; n < count; n++) {
        const spacingMs = options.spacingMinMs + options.random.float() * (options.spacingMaxMs - options.spacingMinMs);
        spacings.push(spacingMs);
        await sleep(spacingMs);
        timings.push(...(await sequentialBumps(writer, counter, 1, seen)));
        onSample?.(n + 1, timings);
      }
      return timings;
    };
    await bumps(options.warmups);
    const hintsBefore = (await pair.writer.adminStatus()).hints;
    const timings = await bumps(options.samples, (done, sofar) => {
      if (done % PROGRESS_EVERY_SAMPLES !== 0 || done === options.samples) return;
      const transition = summarizeLatencies(sofar.map((timing) => timing.seenMs!));
      options.progress(`   ${label}: ${done}/${options.samples} bumps, replica Transition p50 so far ${transition.p50Ms.toFixed(1)} ms`);
    });
    const hintsAfter = (await pair.writer.adminStatus()).hints;
    return figuresOf(pair.wakeHints, timings, spacings, hintDifference(hintsBefore, hintsAfter));
  } finally {
    await reader.close();
    await writer.close();
  }
}

function figuresOf(wakeHints: boolean, timings: readonly BumpTiming[], spacings: readonly number[], hints: WakeHintStats | null): ReplicaLatencyFigures {
  const commit = summarizeLatencies(timings.map((timing) => timing.committedMs));
  const transition = summarizeLatencies(timings.map((timing) => timing.seenMs!));
  return {
    wakeHints,
    samples: timings.length,
    commit,
    transition,
    p50DifferenceMs: round(transition.p50Ms - commit.p50Ms),
    meanSpacingMs: round(spacings.reduce((total, value) => total + value, 0) / Math.max(1, spacings.length), 1),
    hints,
  };
}

function hintDifference(before: WakeHintStats | null, after: WakeHintStats | null): WakeHintStats | null {
  if (before === null || after === null) return null;
  return { sent: after.sent - before.sent, failed: after.failed - before.failed, dropped: after.dropped - before.dropped };
}
