/**
 * Scenario: lognormal latency rules as the benchmarks use them. Sampling a model with a
 * fixed seed gives delays whose median and 99th percentile are the requested ones (the
 * sampling function directly, so no wall clock is involved); the same seed gives the same
 * delays; the size cost adds per MiB of request body before the operation acts and is
 * handed to the endpoint per MiB of response body for after it; injected failures and
 * lost answers carry no download cost; bad parameters are refused with INVALID_ARGUMENT
 * and leave the active rules as they were; and an endpoint with such a rule still serves
 * a 1 MiB PUT and GET intact. Timings are never asserted.
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../../src/base/random.js";
import {
  Faults,
  lognormalShape,
  responseDelayMs,
  sampleLatencyMs,
  STANDARD_NORMAL_P99,
  type FaultRule,
  type FaultTarget,
  type LatencyModel,
} from "./faults.js";
import { s3ClientConfigFor, startS3Endpoint } from "./index.js";

const MIB = 1024 * 1024;
const SAMPLES = 40_000;

function quantile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function sampled(model: LatencyModel, seed: number): number[] {
  const random = new SeededRandom(seed);
  return Array.from({ length: SAMPLES }, () => sampleLatencyMs(model, random)).sort((a, b) => a - b);
}

const put = (bytes: number): FaultTarget => ({ operation: "PutObject", key: "log/1", conditionalPut: true, requestBodyBytes: bytes });
const get: FaultTarget = { operation: "GetObject", key: "log/1", conditionalPut: false, requestBodyBytes: 0 };

describe("lognormal sampling", () => {
  it.each([
    [28, 75],
    [25, 70],
    [5, 50],
  ])("has median ≈ %d ms and p99 ≈ %d ms", (p50Ms, p99Ms) => {
    const delays = sampled({ kind: "lognormal", p50Ms, p99Ms }, 17);
    expect(quantile(delays, 0.5) / p50Ms).toBeGreaterThan(0.97);
    expect(quantile(delays, 0.5) / p50Ms).toBeLessThan(1.03);
    expect(quantile(delays, 0.99) / p99Ms).toBeGreaterThan(0.93);
    expect(quantile(delays, 0.99) / p99Ms).toBeLessThan(1.07);
    expect(delays[0]!).toBeGreaterThan(0);
  });

  it("derives mu and sigma from the two percentiles", () => {
    const { mu, sigma } = lognormalShape(28, 75);
    expect(mu).toBeCloseTo(Math.log(28), 12);
    expect(sigma).toBeCloseTo(Math.log(75 / 28) / STANDARD_NORMAL_P99, 12);
    expect(lognormalShape(10, 10).sigma).toBe(0);
  });

  it("is a fixed delay when p99 equals p50, and replays for the same seed", () => {
    expect(new Set(sampled({ kind: "lognormal", p50Ms: 12, p99Ms: 12 }, 3).map((delay) => delay.toFixed(9)))).toEqual(
      new Set(["12.000000000"]),
    );
    const model: LatencyModel = { kind: "lognormal", p50Ms: 28, p99Ms: 75 };
    expect(sampled(model, 5)).toEqual(sampled(model, 5));
    expect(sampled(model, 5)).not.toEqual(sampled(model, 6));
  });
});

describe("size cost", () => {
  const fixed = (p50Ms: number, perMiBMs: number): FaultRule => ({ latency: { kind: "lognormal", p50Ms, p99Ms: p50Ms, perMiBMs } });

  it("charges the request body before acting and hands the response's cost to the endpoint", () => {
    const faults = new Faults(1);
    faults.set([fixed(20, 10), { operations: ["PutObject"], latency: { kind: "lognormal", p50Ms: 5, p99Ms: 5 } }]);
    const upload = faults.plan(put(2 * MIB));
    expect(upload.delayMs).toBeCloseTo(20 + 2 * 10 + 5, 9);
    expect(upload.responseMsPerMiB).toBe(10);
    const download = faults.plan(get);
    expect(download.delayMs).toBeCloseTo(20, 9);
    expect(responseDelayMs(download, MIB / 2)).toBeCloseTo(5, 9);
    expect(responseDelayMs(download, 0)).toBe(0);
  });

  it("adds the model to a rule's fixed latency and uniform jitter", () => {
    const faults = new Faults(1);
    faults.set([{ latencyMs: 3, latency: { kind: "lognormal", p50Ms: 7, p99Ms: 7 } }]);
    expect(faults.plan(get).delayMs).toBeCloseTo(10, 9);
  });

  it("charges no download when the answer is an injected error or lost", () => {
    const faults = new Faults(1);
    faults.set([{ ...fixed(1, 10), error500Rate: 1 }]);
    expect(faults.plan(get)).toMatchObject({ failure: "InternalError", responseMsPerMiB: 0 });
    faults.set([{ ...fixed(1, 10), dropAfterCommit: 1 }]);
    expect(faults.plan(get)).toMatchObject({ afterCommit: "drop", responseMsPerMiB: 0 });
  });

  it("draws the same delays for the same seed and rules", () => {
    const delays = (seed: number) => {
      const faults = new Faults(seed);
      faults.set([{ jitterMs: 4, latency: { kind: "lognormal", p50Ms: 28, p99Ms: 75, perMiBMs: 10 } }, { error503Rate: 0.1 }]);
      return Array.from({ length: 50 }, (_, index) => faults.plan(index % 2 === 0 ? get : put(4096)));
    };
    expect(delays(9)).toEqual(delays(9));
    expect(delays(9)).not.toEqual(delays(10));
  });
});

describe("validation", () => {
  const invalid = expect.objectContaining({ code: "INVALID_ARGUMENT" });
  const lognormal = (fields: Record<string, unknown>) => [{ latency: { kind: "lognormal", p50Ms: 28, p99Ms: 75, ...fields } as never }];

  it.each([
    ["an unknown kind", lognormal({ kind: "uniform" })],
    ["a missing kind", lognormal({ kind: undefined })],
    ["a zero median", lognormal({ p50Ms: 0 })],
    ["a negative median", lognormal({ p50Ms: -1 })],
    ["a NaN median", lognormal({ p50Ms: Number.NaN })],
    ["a median given as text", lognormal({ p50Ms: "28" })],
    ["a p99 below the median", lognormal({ p99Ms: 20 })],
    ["an infinite p99", lognormal({ p99Ms: Number.POSITIVE_INFINITY })],
    ["a missing p99", lognormal({ p99Ms: undefined })],
    ["a negative size cost", lognormal({ perMiBMs: -1 })],
    ["a NaN size cost", lognormal({ perMiBMs: Number.NaN })],
    ["an unknown field", lognormal({ p90Ms: 40 })],
    ["a model that is not an object", [{ latency: 28 as never }]],
    ["a null model", [{ latency: null as never }]],
  ])("refuses %s and keeps the active rules", (_, rules) => {
    const faults = new Faults(1);
    faults.set([{ latencyMs: 4 }]);
    expect(() => faults.set(rules)).toThrow(invalid);
    expect(faults.plan(get).delayMs).toBe(4);
  });

  it("copies the model, so a caller's later change does not reach the active rule", () => {
    const faults = new Faults(1);
    const model = { kind: "lognormal" as const, p50Ms: 6, p99Ms: 6 };
    faults.set([{ latency: model }]);
    model.p50Ms = 600;
    expect(faults.plan(get).delayMs).toBeCloseTo(6, 9);
  });
});

describe("on the endpoint", () => {
  it("serves a 1 MiB PUT and GET intact under a lognormal rule with a size cost", async () => {
    const endpoint = await startS3Endpoint({ seed: 4 });
    const client = new S3Client({ ...s3ClientConfigFor(endpoint), requestChecksumCalculation: "WHEN_REQUIRED", maxAttempts: 1 });
    try {
      endpoint.faults.set([{ latency: { kind: "lognormal", p50Ms: 1, p99Ms: 3, perMiBMs: 2 } }]);
      const body = new Uint8Array(MIB).map((_, index) => index % 251);
      await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "big", Body: body }));
      const answer = await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "big" }));
      expect(Buffer.from(await answer.Body!.transformToByteArray()).equals(Buffer.from(body))).toBe(true);
    } finally {
      client.destroy();
      await endpoint.close();
    }
  });
});
