import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { openBenchWriter } from "./BenchWriter.js";
import type { EndpointCounters } from "../kit/endpointProtocol.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { mutationRequestCosts, type MutationRequestCosts } from "./requestCosts.js";
import { smallDocumentsUnit } from "./smallDocuments.js";

/**
 * Phase 3: many writers on one shard, each in a loop of "commit a one-document insert,
 * await it". Group commit turns them into one segment per flush. After a warm-up the
 * endpoint's counters are reset and a window of `seconds` is measured: commits that
 * complete inside it count, with their latency (from commit() to acknowledgement) and
 * the segment that carried them. Engine tuning is the default (verify: "always",
 * heartbeat and maintenance drivers running), so the S3 requests include them.
 */
export interface ConcurrentOptions {
  readonly writers: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly withIndex: boolean;
}

export interface ConcurrentFigures extends MutationRequestCosts {
  readonly writers: number;
  readonly withIndex: boolean;
  readonly measuredSeconds: number;
  readonly mutations: number;
  readonly mutationsPerSecond: number;
  readonly segments: number;
  readonly mutationsPerSegment: number;
  readonly commit: LatencySummary;
}

interface Window {
  measuring: boolean;
  stop: boolean;
  readonly latenciesMs: number[];
  readonly seqnos: Set<number>;
}

export async function measureConcurrentWriters(
  endpoint: RemoteEndpoint,
  directory: string,
  options: ConcurrentOptions,
): Promise<ConcurrentFigures> {
  const writer = await openBenchWriter(endpoint.store("concurrent/"), directory, "concurrent");
  const window: Window = { measuring: false, stop: false, latenciesMs: [], seqnos: new Set() };
  const writerLoop = async (index: number) => {
    const documents = { random: new SeededRandom(1_000 + index), label: `w${index}`, withIndex: options.withIndex };
    for (let n = 0; !window.stop; n++) {
      const startedMs = performance.now();
      const result = await writer.engine.commit(smallDocumentsUnit(documents, writer.engine.readTs, 1, n));
      if (!window.measuring) continue;
      window.latenciesMs.push(performance.now() - startedMs);
      window.seqnos.add(result.seqno);
    }
  };
  const running = Promise.all(Array.from({ length: options.writers }, (_, index) => writerLoop(index)));
  // Writers end only when told to; one that fails ends the run with its error.
  const endedEarly = running.then(() => {
    throw new CairnError("INTERNAL", "the writers stopped before the run ended");
  });
  try {
    await Promise.race([sleep(options.warmupSeconds * 1000), endedEarly]);
    await endpoint.resetCounters();
    window.measuring = true;
    const windowStartedMs = performance.now();
    await Promise.race([sleep(options.seconds * 1000), endedEarly]);
    window.measuring = false;
    const measuredSeconds = (performance.now() - windowStartedMs) / 1000;
    const counters = await endpoint.counters();
    return figures(options, window, measuredSeconds, counters);
  } finally {
    window.stop = true;
    await running.catch(() => undefined);
    endedEarly.catch(() => undefined);
    await writer.close();
  }
}

function figures(
  options: ConcurrentOptions,
  window: Window,
  measuredSeconds: number,
  counters: EndpointCounters,
): ConcurrentFigures {
  const mutations = window.latenciesMs.length;
  return {
    writers: options.writers,
    withIndex: options.withIndex,
    measuredSeconds: round(measuredSeconds, 3),
    mutations,
    mutationsPerSecond: Math.round(mutations / measuredSeconds),
    segments: window.seqnos.size,
    mutationsPerSegment: round(mutations / window.seqnos.size, 1),
    commit: summarizeLatencies(window.latenciesMs),
    ...mutationRequestCosts(counters, mutations),
  };
}
