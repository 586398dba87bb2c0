import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { REQUEST_PRICE_DOLLARS, S3_OPERATIONS, type S3Operation } from "../../test/support/s3-endpoint/index.js";
import { openBenchWriter } from "./BenchWriter.js";
import type { EndpointCounters } from "./endpointProtocol.js";
import { round, summarizeLatencies, type LatencySummary } from "./LatencySummary.js";
import type { RemoteEndpoint } from "./RemoteEndpoint.js";
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

export interface ConcurrentFigures {
  readonly writers: number;
  readonly withIndex: boolean;
  readonly measuredSeconds: number;
  readonly mutations: number;
  readonly mutationsPerSecond: number;
  readonly segments: number;
  readonly mutationsPerSegment: number;
  readonly commit: LatencySummary;
  /** Requests the endpoint served in the window, per operation (operations with none left out). */
  readonly requests: Partial<Record<S3Operation, number>>;
  readonly requestsPer1000Mutations: Partial<Record<S3Operation, number>>;
  readonly putBytesPerMutation: number;
  /** S3 Standard request cost (PUT/LIST $0.005, GET $0.0004 per 1000) per million mutations. */
  readonly dollarsPerMillionMutations: number;
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
  const requests: Partial<Record<S3Operation, number>> = {};
  const requestsPer1000Mutations: Partial<Record<S3Operation, number>> = {};
  let dollars = 0;
  for (const operation of S3_OPERATIONS) {
    const count = counters[operation].requests;
    if (count === 0) continue;
    requests[operation] = count;
    requestsPer1000Mutations[operation] = round((count * 1000) / mutations, 3);
    dollars += count * REQUEST_PRICE_DOLLARS[operation];
  }
  return {
    writers: options.writers,
    withIndex: options.withIndex,
    measuredSeconds: round(measuredSeconds, 3),
    mutations,
    mutationsPerSecond: Math.round(mutations / measuredSeconds),
    segments: window.seqnos.size,
    mutationsPerSegment: round(mutations / window.seqnos.size, 1),
    commit: summarizeLatencies(window.latenciesMs),
    requests,
    requestsPer1000Mutations,
    putBytesPerMutation: round(counters.PutObject.bytesIn / mutations, 1),
    dollarsPerMillionMutations: round((dollars * 1_000_000) / mutations, 4),
  };
}
