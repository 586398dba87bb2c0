import { invalidArgument } from "../../../src/base/errors.js";
import { SeededRandom, type Random } from "../../../src/base/random.js";
import { isS3Operation, type S3Operation } from "./operations.js";

/**
 * Fault injection (S3.md §6): latency (fixed, uniform jitter, or lognormal with a size
 * cost), error answers, commit-then-drop, commit-then-5xx, radosgw's 500 to race losers,
 * and pause, chosen per operation and key pattern, with randomness from a seed so that a
 * failing run replays.
 *
 * Invariants:
 * - Faults decide before the operation acts: an injected 503/500/409 means nothing
 *   happened; a drop means the operation acted in full and only the answer is lost; an
 *   error after commit means the operation acted in full (or was refused, as it would
 *   have been) and its answer was replaced by a 5xx, as a gateway or a failing backend
 *   may do; a lost race answered 500 changes only the answer of a write that was refused.
 * - Random numbers are drawn only for jitters, lognormal latencies (two per rule and
 *   request, Box–Muller) and rates above zero, in rule order, so a seed yields the same
 *   decisions for the same rules and request sequence.
 * - Size costs are a fixed function of bytes, drawn from nothing: the request body's
 *   cost is slept with the other latencies, before the operation acts (an upload ends
 *   before S3 acts on it); the response body's cost is slept after the operation acted
 *   and before its answer is sent (S3 reads the object, then streams it). Only a
 *   successful operation's own body is charged: 304s, HEADs, injected errors, drops and
 *   error documents cost nothing. So the decision still precedes the action; only the
 *   download time follows it, and a GET is the one operation whose size is known only
 *   then (a conditional or ranged GET sends less than the object).
 * - A held request leaves `heldRequests` when released, when its client goes away, or
 *   when the endpoint closes; it is never forgotten while counted.
 */

export interface FaultRule {
  /** Operations this rule applies to; default all. */
  readonly operations?: readonly S3Operation[];
  /** Applies only to object keys matching this pattern; default all keys. Never matches bucket-level requests. */
  readonly keyPattern?: RegExp;
  /** Fixed latency added before the operation acts. */
  readonly latencyMs?: number;
  /** Plus a uniform random delay in [0, jitterMs]. */
  readonly jitterMs?: number;
  /**
   * Plus a delay drawn from a latency model with a tail and a size cost (see
   * LatencyModel); it adds to latencyMs and jitterMs when a rule has both.
   */
  readonly latency?: LatencyModel;
  /** 0..1: answer 503 SlowDown without acting. */
  readonly error503Rate?: number;
  /** 0..1: answer 500 InternalError without acting. */
  readonly error500Rate?: number;
  /** 0..1, conditional PUTs only: answer 409 ConditionalRequestConflict without acting. */
  readonly conflict409Rate?: number;
  /** Act, then destroy the socket without answering: the next `count` matching requests. */
  readonly dropAfterCommit?: number;
  /** Same, at a rate 0..1. */
  readonly dropAfterCommitRate?: number;
  /** Act, then answer `errorAfterCommitStatus` instead of the real answer: the next `count` matching requests. */
  readonly errorAfterCommit?: number;
  /** Same, at a rate 0..1. */
  readonly errorAfterCommitRate?: number;
  /**
   * The status of an error after commit (default 500): 500 InternalError and 503
   * ServiceUnavailable as S3 XML, 502 as the HTML page of a reverse proxy.
   */
  readonly errorAfterCommitStatus?: AfterCommitStatus;
  /**
   * 0..1, conditional PUTs only: a write whose condition held when the request arrived
   * but failed when it acted, because another write to the key landed meanwhile (it lost
   * a race), answers 500 instead of 412. Ceph radosgw 16 answers such losers of racing
   * If-Match PUTs 500 (ECANCELED inside), while a condition that failed on arrival gets
   * its 412 there too.
   */
  readonly lostRace500Rate?: number;
}

/**
 * A latency distribution for one request, as object stores show it: most requests near
 * the median, a long tail, and a transfer time proportional to the bytes moved.
 *
 * - `lognormal`: delay = exp(mu + sigma·Z) for a standard normal Z, with mu = ln(p50Ms)
 *   and sigma = (ln(p99Ms) − ln(p50Ms)) / z₀.₉₉ (z₀.₉₉ ≈ 2.3263), so the median and the
 *   99th percentile are the ones asked for; p99Ms = p50Ms is a fixed delay. `perMiBMs`
 *   (default 0) adds that many milliseconds per MiB of request body before the operation
 *   acts and per MiB of response body after it (see the invariants above).
 */
export type LatencyModel = {
  readonly kind: "lognormal";
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly perMiBMs?: number;
};

export const LATENCY_MODEL_KINDS = ["lognormal"] as const satisfies readonly LatencyModel["kind"][];

/** The 0.99 quantile of the standard normal distribution. */
export const STANDARD_NORMAL_P99 = 2.3263478740408408;
const BYTES_PER_MIB = 1024 * 1024;

export const AFTER_COMMIT_STATUSES = [500, 502, 503] as const;
export type AfterCommitStatus = (typeof AFTER_COMMIT_STATUSES)[number];

export interface RequestFilter {
  readonly operations?: readonly S3Operation[];
  readonly keyPattern?: RegExp;
}

export interface FaultController {
  /** Replaces the active rules (evaluated in order; all matching rules apply). */
  set(rules: readonly FaultRule[]): void;
  clear(): void;
  /** Holds every matching request (default: all) until release(). */
  pause(filter?: RequestFilter): void;
  release(): void;
  /** Number of requests currently held by pause(). */
  readonly heldRequests: number;
}

/** What the endpoint knows about a request when faults are decided. */
export interface FaultTarget {
  readonly operation: S3Operation;
  readonly key: string | undefined;
  readonly conditionalPut: boolean;
  /** Bytes of the request body as received (what an upload moves). */
  readonly requestBodyBytes: number;
}

export type InjectedFailure = "SlowDown" | "InternalError" | "ConditionalRequestConflict";

export interface FaultPlan {
  /** Slept before the operation acts: fixed, jitter and model latencies, and the request body's size cost. */
  readonly delayMs: number;
  /** Milliseconds per MiB of the answer's body, slept after the operation acted (see responseDelayMs). */
  readonly responseMsPerMiB: number;
  readonly failure: InjectedFailure | undefined;
  /** What replaces the answer once the operation acted: no answer at all, or a 5xx. */
  readonly afterCommit: "drop" | AfterCommitStatus | undefined;
  /** A conditional PUT that loses a race answers 500 instead of 412. */
  readonly lostRaceAs500: boolean;
}

interface ActiveRule {
  readonly rule: FaultRule;
  dropsLeft: number;
  errorsLeft: number;
}

interface HeldRequest {
  resume(): void;
}

const RULE_FIELDS = new Set([
  "operations",
  "keyPattern",
  "latencyMs",
  "jitterMs",
  "latency",
  "error503Rate",
  "error500Rate",
  "conflict409Rate",
  "dropAfterCommit",
  "dropAfterCommitRate",
  "errorAfterCommit",
  "errorAfterCommitRate",
  "errorAfterCommitStatus",
  "lostRace500Rate",
]);

const LATENCY_MODEL_FIELDS = new Set(["kind", "p50Ms", "p99Ms", "perMiBMs"]);

export class Faults implements FaultController {
  private active: ActiveRule[] = [];
  private pauseFilter: RequestFilter | undefined;
  private readonly held = new Set<HeldRequest>();
  private readonly random: Random;

  constructor(seed: number) {
    this.random = new SeededRandom(seed);
  }

  set(rules: readonly FaultRule[]): void {
    if (!Array.isArray(rules)) throw invalidArgument("fault rules must be an array");
    const copies = rules.map((rule, index) => validatedRule(rule, index));
    this.active = copies.map((rule) => ({ rule, dropsLeft: rule.dropAfterCommit ?? 0, errorsLeft: rule.errorAfterCommit ?? 0 }));
  }

  clear(): void {
    this.active = [];
  }

  pause(filter: RequestFilter = {}): void {
    validateFilter(filter, "pause filter");
    this.pauseFilter = { ...filter, ...(filter.operations === undefined ? {} : { operations: [...filter.operations] }) };
  }

  release(): void {
    this.pauseFilter = undefined;
    const held = [...this.held];
    this.held.clear();
    for (const request of held) request.resume();
  }

  get heldRequests(): number {
    return this.held.size;
  }

  /** Resolves at once unless a pause holds this request; rejects when `signal` aborts. */
  waitWhilePaused(target: FaultTarget, signal: AbortSignal): Promise<void> {
    if (this.pauseFilter === undefined || !matches(this.pauseFilter, target)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const request: HeldRequest = {
        resume: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.held.delete(request);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.held.add(request);
    });
  }

  plan(target: FaultTarget): FaultPlan {
    const matching = this.active.filter((active) => matches(active.rule, target));
    let delayMs = 0;
    let responseMsPerMiB = 0;
    for (const { rule } of matching) {
      delayMs += (rule.latencyMs ?? 0) + this.uniform(rule.jitterMs ?? 0);
      if (rule.latency === undefined) continue;
      const perMiBMs = rule.latency.perMiBMs ?? 0;
      delayMs += sampleLatencyMs(rule.latency, this.random) + (perMiBMs * target.requestBodyBytes) / BYTES_PER_MIB;
      responseMsPerMiB += perMiBMs;
    }
    for (const { rule } of matching) {
      const failure = this.drawFailure(rule, target);
      if (failure !== undefined) return { delayMs, responseMsPerMiB: 0, failure, afterCommit: undefined, lostRaceAs500: false };
    }
    const afterCommit = this.drawAfterCommit(matching);
    const lostRaceAs500 = target.conditionalPut && matching.some(({ rule }) => this.happens(rule.lostRace500Rate));
    return { delayMs, responseMsPerMiB: afterCommit === undefined ? responseMsPerMiB : 0, failure: undefined, afterCommit, lostRaceAs500 };
  }

  private drawFailure(rule: FaultRule, target: FaultTarget): InjectedFailure | undefined {
    if (this.happens(rule.error503Rate)) return "SlowDown";
    if (this.happens(rule.error500Rate)) return "InternalError";
    if (target.conditionalPut && this.happens(rule.conflict409Rate)) return "ConditionalRequestConflict";
    return undefined;
  }

  /**
   * Rules decide in order: one with drops left consumes one, otherwise its rate may drop;
   * then the same for its errors after commit. The first rule that decides wins.
   */
  private drawAfterCommit(matching: readonly ActiveRule[]): "drop" | AfterCommitStatus | undefined {
    for (const active of matching) {
      if (active.dropsLeft > 0) {
        active.dropsLeft--;
        return "drop";
      }
      if (this.happens(active.rule.dropAfterCommitRate)) return "drop";
      const status = active.rule.errorAfterCommitStatus ?? 500;
      if (active.errorsLeft > 0) {
        active.errorsLeft--;
        return status;
      }
      if (this.happens(active.rule.errorAfterCommitRate)) return status;
    }
    return undefined;
  }

  private happens(rate: number | undefined): boolean {
    return rate !== undefined && rate > 0 && this.random.float() < rate;
  }

  private uniform(maxMs: number): number {
    return maxMs > 0 ? this.random.float() * maxMs : 0;
  }
}

/** The download time of an answer whose body has `responseBodyBytes` bytes, under `plan`. */
export function responseDelayMs(plan: FaultPlan, responseBodyBytes: number): number {
  return (plan.responseMsPerMiB * responseBodyBytes) / BYTES_PER_MIB;
}

/** mu and sigma of the lognormal whose median is p50Ms and whose 99th percentile is p99Ms. */
export function lognormalShape(p50Ms: number, p99Ms: number): { readonly mu: number; readonly sigma: number } {
  const mu = Math.log(p50Ms);
  return { mu, sigma: (Math.log(p99Ms) - mu) / STANDARD_NORMAL_P99 };
}

/**
 * One delay from `model`, without its size cost, using two draws of `random`. Box–Muller
 * with u1 in (0, 1], so the logarithm is finite: |Z| stays below ~6.7 with 32-bit
 * draws, which bounds a sample at exp(mu + 6.7·sigma).
 */
export function sampleLatencyMs(model: LatencyModel, random: Random): number {
  switch (model.kind) {
    case "lognormal": {
      const { mu, sigma } = lognormalShape(model.p50Ms, model.p99Ms);
      const u1 = 1 - random.float();
      const u2 = random.float();
      const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
      return Math.exp(mu + sigma * z);
    }
  }
}

function matches(filter: RequestFilter, target: FaultTarget): boolean {
  if (filter.operations !== undefined && !filter.operations.includes(target.operation)) return false;
  if (filter.keyPattern === undefined) return true;
  // search() ignores lastIndex, so a /g pattern behaves the same on every request.
  return target.key !== undefined && target.key.search(filter.keyPattern) >= 0;
}

function validatedRule(rule: FaultRule, index: number): FaultRule {
  const where = `fault rule ${index}`;
  if (typeof rule !== "object" || rule === null) throw invalidArgument(`${where} must be an object`);
  for (const name of Object.keys(rule)) {
    if (!RULE_FIELDS.has(name)) throw invalidArgument(`${where} has an unknown field "${name}"`, { field: name });
  }
  validateFilter(rule, where);
  for (const name of ["latencyMs", "jitterMs"] as const) {
    const value = rule[name];
    if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
      throw invalidArgument(`${where}: ${name} must be a finite number >= 0`, { [name]: value });
    }
  }
  for (const name of [
    "error503Rate",
    "error500Rate",
    "conflict409Rate",
    "dropAfterCommitRate",
    "errorAfterCommitRate",
    "lostRace500Rate",
  ] as const) {
    const value = rule[name];
    if (value !== undefined && !(typeof value === "number" && value >= 0 && value <= 1)) {
      throw invalidArgument(`${where}: ${name} must be a number in [0, 1]`, { [name]: value });
    }
  }
  for (const name of ["dropAfterCommit", "errorAfterCommit"] as const) {
    const count = rule[name];
    if (count !== undefined && !(Number.isSafeInteger(count) && count >= 0)) {
      throw invalidArgument(`${where}: ${name} must be an integer >= 0`, { [name]: count });
    }
  }
  if (rule.latency !== undefined) validateLatencyModel(rule.latency, where);
  const status = rule.errorAfterCommitStatus;
  if (status !== undefined && !(AFTER_COMMIT_STATUSES as readonly unknown[]).includes(status)) {
    throw invalidArgument(`${where}: errorAfterCommitStatus must be one of ${AFTER_COMMIT_STATUSES.join(", ")}`, {
      errorAfterCommitStatus: status,
    });
  }
  return {
    ...rule,
    ...(rule.operations === undefined ? {} : { operations: [...rule.operations] }),
    ...(rule.latency === undefined ? {} : { latency: { ...rule.latency } }),
  };
}

function validateLatencyModel(model: LatencyModel, where: string): void {
  if (typeof model !== "object" || model === null) throw invalidArgument(`${where}: latency must be an object`);
  for (const name of Object.keys(model)) {
    if (!LATENCY_MODEL_FIELDS.has(name)) throw invalidArgument(`${where}: latency has an unknown field "${name}"`, { field: name });
  }
  if (!(LATENCY_MODEL_KINDS as readonly unknown[]).includes(model.kind)) {
    throw invalidArgument(`${where}: latency.kind must be one of ${LATENCY_MODEL_KINDS.join(", ")}`, { kind: model.kind });
  }
  const { p50Ms, p99Ms, perMiBMs } = model;
  if (!(typeof p50Ms === "number" && Number.isFinite(p50Ms) && p50Ms > 0)) {
    throw invalidArgument(`${where}: latency.p50Ms must be a finite number > 0`, { p50Ms });
  }
  if (!(typeof p99Ms === "number" && Number.isFinite(p99Ms) && p99Ms >= p50Ms)) {
    throw invalidArgument(`${where}: latency.p99Ms must be a finite number >= p50Ms`, { p50Ms, p99Ms });
  }
  if (perMiBMs !== undefined && !(typeof perMiBMs === "number" && Number.isFinite(perMiBMs) && perMiBMs >= 0)) {
    throw invalidArgument(`${where}: latency.perMiBMs must be a finite number >= 0`, { perMiBMs });
  }
}

function validateFilter(filter: RequestFilter, where: string): void {
  if (typeof filter !== "object" || filter === null) throw invalidArgument(`${where} must be an object`);
  if (filter.operations !== undefined) {
    if (!Array.isArray(filter.operations) || !filter.operations.every(isS3Operation)) {
      throw invalidArgument(`${where}: operations must be an array of S3 operations`, { operations: filter.operations });
    }
  }
  if (filter.keyPattern !== undefined && !(filter.keyPattern instanceof RegExp)) {
    throw invalidArgument(`${where}: keyPattern must be a RegExp`);
  }
}
