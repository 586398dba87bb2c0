/**
 * Scenario: store operations fail transiently a few times, or forever, or for good. The
 * retry loop repeats only transient failures, waits a full-jitter exponential backoff
 * (never less than a throttle's retryAfterMs) on the injected clock, and gives up after
 * the attempt bound keeping the error's code.
 */
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/base/clock.js";
import { CairnError, type ErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { backoffDelayMs, retryTransient, type RetryPolicy } from "../../src/objectstore/retry.js";

const POLICY: RetryPolicy = { attemptsMax: 6, backoffBaseMs: 50, backoffMaxMs: 1_000 };

/** A clock whose sleeps return at once and are written down, so waits can be checked. */
class RecordingClock implements Clock {
  readonly sleeps: number[] = [];
  private currentMs = 0;

  nowMs(): number {
    return this.currentMs;
  }

  monotonicMs(): number {
    return this.currentMs;
  }

  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.currentMs += ms;
  }

  readonly setTimer = systemClock.setTimer;
}

function failing(codes: readonly ErrorCode[], details: Record<string, unknown> = {}) {
  let calls = 0;
  const attempt = async (attemptNumber: number) => {
    calls += 1;
    expect(attemptNumber).toBe(calls);
    const code = codes[calls - 1];
    if (code !== undefined) throw new CairnError(code, `failure ${calls}`, { details });
    return `done after ${calls}`;
  };
  return { attempt, calls: () => calls };
}

describe("retryTransient", () => {
  it("repeats transient failures with growing, jittered, capped waits", async () => {
    const clock = new RecordingClock();
    const { attempt } = failing(["STORE_TRANSIENT", "STORE_UNREACHABLE", "STORE_TRANSIENT", "STORE_TRANSIENT", "STORE_TRANSIENT"]);
    const result = await retryTransient(attempt, { clock, random: new SeededRandom(3), policy: POLICY });
    expect(result).toBe("done after 6");
    expect(clock.sleeps).toHaveLength(5);
    clock.sleeps.forEach((ms, index) => {
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(Math.min(POLICY.backoffMaxMs, POLICY.backoffBaseMs * 2 ** index));
    });
  });

  it("never repeats conflicts, ambiguous outcomes or bad input", async () => {
    for (const code of ["CAS_CONFLICT", "STORE_AMBIGUOUS_OUTCOME", "STORE_ACCESS_DENIED", "STORE_REQUEST_FAILED"] as const) {
      const clock = new RecordingClock();
      const { attempt, calls } = failing([code]);
      await expect(retryTransient(attempt, { clock, random: new SeededRandom(1), policy: POLICY })).rejects.toMatchObject({
        code,
      });
      expect(calls()).toBe(1);
      expect(clock.sleeps).toEqual([]);
    }
  });

  it("gives up after the attempt bound, keeping the code and saying how often it tried", async () => {
    const clock = new RecordingClock();
    const { attempt, calls } = failing(Array(10).fill("STORE_UNREACHABLE") as ErrorCode[]);
    const error = await retryTransient(attempt, { clock, random: new SeededRandom(1), policy: POLICY }).catch(
      (reason: unknown) => reason,
    );
    expect(error).toMatchObject({ code: "STORE_UNREACHABLE", details: { attempts: 6 } });
    expect((error as Error).message).toContain("gave up after 6 attempts");
    expect((error as Error).cause).toMatchObject({ code: "STORE_UNREACHABLE", message: "failure 6" });
    expect(calls()).toBe(6);
    expect(clock.sleeps).toHaveLength(5);
  });

  it("waits at least the throttle's retryAfterMs", async () => {
    const clock = new RecordingClock();
    const { attempt } = failing(["STORE_TRANSIENT", "STORE_TRANSIENT"], { retryAfterMs: 1_000 });
    await retryTransient(attempt, { clock, random: new SeededRandom(9), policy: POLICY });
    expect(clock.sleeps).toHaveLength(2);
    for (const ms of clock.sleeps) expect(ms).toBeGreaterThanOrEqual(1_000);
  });

  it("computes the full-jitter ceiling per attempt", () => {
    const alwaysTop = { float: () => 0.999_999, bytes: (length: number) => new Uint8Array(length) };
    const ceilings = [1, 2, 3, 4, 5, 6, 7].map((attempt) => Math.round(backoffDelayMs(attempt, undefined, POLICY, alwaysTop)));
    expect(ceilings).toEqual([50, 100, 200, 400, 800, 1_000, 1_000]);
  });
});
