import {
  type Clock,
  CairnError,
  hasErrorCode,
  isStoreTransient,
  STORE_ATTEMPTS_MAX,
  STORE_BACKOFF_BASE_MS,
  STORE_BACKOFF_MAX_MS,
  type Random,
} from "../base/index.js";

/**
 * Bounded retry of store operations that failed transiently (STORE_TRANSIENT,
 * STORE_UNREACHABLE), with full-jitter exponential backoff on the injected clock.
 *
 * Invariants:
 * - At most `attemptsMax` attempts; every other error (a conflict, an ambiguous outcome,
 *   bad input) is thrown at once, unchanged.
 * - The wait before attempt n+1 is uniform in [0, min(backoffMaxMs, backoffBaseMs·2^(n-1))]
 *   (full jitter spreads racing clients apart), but never less than an error's
 *   `details.retryAfterMs` (a throttle that names its own wait, e.g. R2's 1 write/s/key).
 * - When the attempts run out the last error's code is kept, its message says how many
 *   attempts were made, and the error itself is the cause.
 */

export interface RetryPolicy {
  readonly attemptsMax: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  attemptsMax: STORE_ATTEMPTS_MAX,
  backoffBaseMs: STORE_BACKOFF_BASE_MS,
  backoffMaxMs: STORE_BACKOFF_MAX_MS,
};

export interface RetryContext {
  readonly clock: Clock;
  readonly random: Random;
  readonly policy?: RetryPolicy;
}

/** Runs `attempt` (numbered from 1) until it succeeds, fails for good, or attempts run out. */
export async function retryTransient<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  context: RetryContext,
): Promise<T> {
  const policy = context.policy ?? defaultRetryPolicy;
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      if (!isStoreTransient(error)) throw error;
      if (attemptNumber >= policy.attemptsMax) throw exhausted(error, attemptNumber);
      await context.clock.sleep(backoffDelayMs(attemptNumber, error, policy, context.random));
    }
  }
}

/** The wait after failed attempt `attemptNumber` (1-based). */
export function backoffDelayMs(attemptNumber: number, error: unknown, policy: RetryPolicy, random: Random): number {
  const ceilingMs = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (attemptNumber - 1));
  const jitteredMs = random.float() * ceilingMs;
  return Math.max(jitteredMs, retryAfterMsOf(error));
}

function retryAfterMsOf(error: unknown): number {
  if (typeof error !== "object" || error === null) return 0;
  const details = (error as { details?: { retryAfterMs?: unknown } }).details;
  const retryAfterMs = details?.retryAfterMs;
  return typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) ? retryAfterMs : 0;
}

function exhausted(error: unknown, attempts: number): CairnError {
  const code = hasErrorCode(error, "STORE_UNREACHABLE") ? "STORE_UNREACHABLE" : "STORE_TRANSIENT";
  const { message, details } = error as { message?: unknown; details?: Readonly<Record<string, unknown>> };
  const text = typeof message === "string" ? message : String(error);
  return new CairnError(code, `${text} (gave up after ${attempts} attempts)`, {
    cause: error,
    details: { ...details, attempts },
  });
}
