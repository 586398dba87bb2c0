import type { FaultRule, S3Operation } from "../../test/support/s3-endpoint/index.js";

/**
 * The request latencies the commit benchmark can inject into its S3 test endpoint, one
 * named model each, selected with `--latency`. Every model is a list of fault rules the
 * endpoint applies to each request (delays of all matching rules add up), plus the PUT
 * median the open-loop latency bound falls back on when phase 1 did not measure one.
 */
export const LATENCY_MODEL_NAMES = ["s3-standard", "uniform"] as const;
export type LatencyModelName = (typeof LATENCY_MODEL_NAMES)[number];

/** A fault rule that survives JSON (no keyPattern), so it can be sent to the endpoint child. */
export type LatencyRule = Pick<FaultRule, "operations" | "latencyMs" | "jitterMs" | "latency">;

export interface BenchLatencyModel {
  readonly name: LatencyModelName;
  /** One line for the table. */
  readonly description: string;
  readonly rules: readonly LatencyRule[];
  /** Median latency of a small (4 KiB or less) PUT under this model. */
  readonly putP50Ms: number;
}

/**
 * The old model, kept selectable for comparison with earlier figures: every request
 * 15 ms + uniform [0, 10] ms (20 ms ± 5 ms), whatever its size. No tail: its p99 is
 * 24.9 ms, 1.25× the median, which flatters every percentile above the median.
 */
export const SAME_REGION_LATENCY = { latencyMs: 15, jitterMs: 10 } as const;

/** S3 operations that write (charged with the PUT distribution) and the rest (the GET one). */
const WRITE_OPERATIONS: readonly S3Operation[] = ["PutObject", "DeleteObject", "DeleteObjects", "CreateBucket"];
const READ_OPERATIONS: readonly S3Operation[] = ["GetObject", "HeadObject", "ListObjectsV2", "HeadBucket"];

/**
 * S3 Standard in one region, seen from a client in the same region: lognormal per
 * request, with these assumptions (from issue 8; not measured by this benchmark):
 * - a PUT of 4 KiB: p50 28 ms, p99 75 ms; a GET: p50 25 ms, p99 70 ms — the range
 *   same-region measurements of small objects commonly report (median in the 20–30 ms
 *   range, p99 about 2.5–3× the median). Deletes and bucket calls take the PUT shape,
 *   HEAD and LIST the GET one (real LISTs are slower; the engine sends few of them).
 * - a size cost of 10 ms per MiB each way, i.e. ~100 MiB/s on one connection, about
 *   what a single S3 stream from a same-region EC2 instance sustains (published
 *   single-threaded s3-benchmark runs show tens to ~100 MB/s per connection). A 4 KiB
 *   body adds 0.04 ms; an 8 MiB snapshot part 80 ms.
 * Its tail is what group commit feels: a commit waits for the flush in flight, then its
 * own PUT and GET, each drawn from these distributions.
 */
export const S3_STANDARD_LATENCY = {
  put: { kind: "lognormal", p50Ms: 28, p99Ms: 75, perMiBMs: 10 },
  get: { kind: "lognormal", p50Ms: 25, p99Ms: 70, perMiBMs: 10 },
} as const;

export const LATENCY_MODELS: Readonly<Record<LatencyModelName, BenchLatencyModel>> = {
  "s3-standard": {
    name: "s3-standard",
    description:
      `S3 Standard, same region: lognormal PUT p50 ${S3_STANDARD_LATENCY.put.p50Ms} / p99 ${S3_STANDARD_LATENCY.put.p99Ms} ms, ` +
      `GET p50 ${S3_STANDARD_LATENCY.get.p50Ms} / p99 ${S3_STANDARD_LATENCY.get.p99Ms} ms, ` +
      `+ ${S3_STANDARD_LATENCY.put.perMiBMs} ms per MiB`,
    rules: [
      { operations: WRITE_OPERATIONS, latency: S3_STANDARD_LATENCY.put },
      { operations: READ_OPERATIONS, latency: S3_STANDARD_LATENCY.get },
    ],
    putP50Ms: S3_STANDARD_LATENCY.put.p50Ms,
  },
  uniform: {
    name: "uniform",
    description: `uniform ${SAME_REGION_LATENCY.latencyMs} ms + [0, ${SAME_REGION_LATENCY.jitterMs}] ms per request, no size cost`,
    rules: [SAME_REGION_LATENCY],
    putP50Ms: SAME_REGION_LATENCY.latencyMs + SAME_REGION_LATENCY.jitterMs / 2,
  },
};
