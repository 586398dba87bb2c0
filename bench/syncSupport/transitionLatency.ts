import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { mutationRequestCosts } from "../commitSupport/requestCosts.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { BenchSocket, updatedValue } from "./BenchSocket.js";
import { primeCounter, sequentialBumps } from "./sequentialBumps.js";

export interface TransitionLatencyFigures {
  readonly samples: number;
  /** B's send → B's MutationResponse. */
  readonly commit: LatencySummary;
  /** B's send → A's Transition carrying the new value. */
  readonly transition: LatencySummary;
  /** transition p50 − commit p50 (target ≤ 5 ms). */
  readonly p50DifferenceMs: number;
  /** S3 requests the endpoint served per commit over the measured samples, background included. */
  readonly s3RequestsPerCommit: Record<string, number>;
}

/**
 * Phase 1: two raw protocol clients on the same node. A subscribes to
 * `counters:get {name: "latency"}`; B bumps that counter `samples` times, one at a time
 * (after `warmups`), and each sample times B's send against B's MutationResponse (commit
 * latency) and against A's Transition carrying the new value (what another client sees).
 */
export async function measureTransitionLatency(endpoint: RemoteEndpoint, syncUrl: string, samples: number, warmups: number): Promise<TransitionLatencyFigures> {
  const reader = await BenchSocket.connect(syncUrl);
  const writer = await BenchSocket.connect(syncUrl);
  try {
    const counter = await primeCounter(writer, "latency");
    const { queryId } = await reader.subscribe("counters:get", { name: "latency" });
    const seen = (expected: number) => reader.expect((message) => updatedValue(message, queryId) === expected).then((frame) => frame.atMs);
    await sequentialBumps(writer, counter, warmups, seen);
    await endpoint.resetCounters();
    const timings = await sequentialBumps(writer, counter, samples, seen);
    const requests = mutationRequestCosts(await endpoint.counters(), samples).requestsPer1000Mutations;
    const commit = summarizeLatencies(timings.map((timing) => timing.committedMs));
    const transition = summarizeLatencies(timings.map((timing) => timing.seenMs!));
    return {
      samples,
      commit,
      transition,
      p50DifferenceMs: round(transition.p50Ms - commit.p50Ms),
      s3RequestsPerCommit: Object.fromEntries(Object.entries(requests).map(([operation, per1000]) => [operation, round(per1000 / 1000, 3)])),
    };
  } finally {
    await reader.close();
    await writer.close();
  }
}
