import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";

/**
 * Phase 1, the baseline a commit is compared with: sequential create-only PUTs of a
 * segment-sized body, and the same PUT followed by a conditional GET of a manifest-sized
 * object that answers 304 (what a verified commit sends), through one S3ObjectStore.
 */
export interface RoundTripFigures {
  readonly bodyBytes: number;
  readonly put: LatencySummary;
  readonly putGet: LatencySummary;
}

/** About the size of a one-document segment (header, one revision, checksum trailer). */
export const ROUND_TRIP_BODY_BYTES = 512;
/** Samples discarded first: they open the client's sockets. */
const WARMUP_SAMPLES = 10;

export async function measureRoundTrips(store: ObjectStore, samples: number): Promise<RoundTripFigures> {
  try {
    return await timeRoundTrips(store, samples);
  } finally {
    await store.close();
  }
}

async function timeRoundTrips(store: ObjectStore, samples: number): Promise<RoundTripFigures> {
  const random = new SeededRandom(7);
  const body = () => random.bytes(ROUND_TRIP_BODY_BYTES);
  const { etag } = await store.create("manifest", body());
  let key = 0;
  const put = async () => {
    await store.create(`log/${key++}`, body());
  };
  const putGet = async () => {
    await put();
    const answer = await store.get("manifest", { ifNoneMatch: etag });
    if (answer !== "not-modified") throw new CairnError("INTERNAL", "the conditional GET of an unchanged object did not answer 304");
  };
  return {
    bodyBytes: ROUND_TRIP_BODY_BYTES,
    put: summarizeLatencies(await timeSequentially(put, samples)),
    putGet: summarizeLatencies(await timeSequentially(putGet, samples)),
  };
}

/** Runs `operation` WARMUP_SAMPLES + `samples` times one after another; returns the timed samples in ms. */
export async function timeSequentially(operation: () => Promise<unknown>, samples: number): Promise<number[]> {
  for (let warmup = 0; warmup < WARMUP_SAMPLES; warmup++) await operation();
  const latenciesMs: number[] = [];
  for (let sample = 0; sample < samples; sample++) {
    const started = performance.now();
    await operation();
    latenciesMs.push(performance.now() - started);
  }
  return latenciesMs;
}
