import { invalidArgument } from "../../../src/base/errors.js";
import { SeededRandom, type Random } from "../../../src/base/random.js";
import { isS3Operation, type S3Operation } from "./operations.js";

/**
 * Fault injection (S3.md §6): latency, error answers, commit-then-drop, commit-then-5xx,
 * radosgw's 500 to race losers, and pause, chosen per operation and key pattern, with
 * randomness from a seed so that a failing run replays.
 *
 * Invariants:
 * - Faults decide before the operation acts: an injected 503/500/409 means nothing
 *   happened; a drop means the operation acted in full and only the answer is lost; an
 *   error after commit means the operation acted in full (or was refused, as it would
 *   have been) and its answer was replaced by a 5xx, as a gateway or a failing backend
 *   may do; a lost race answered 500 changes only the answer of a write that was refused.
 * - Random numbers are drawn only for jitters and rates above zero, in rule order, so a
 *   seed yields the same decisions for the same rules and request sequence.
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
}

export type InjectedFailure = "SlowDown" | "InternalError" | "ConditionalRequestConflict";

export interface FaultPlan {
  readonly delayMs: number;
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
    for (const { rule } of matching) delayMs += (rule.latencyMs ?? 0) + this.uniform(rule.jitterMs ?? 0);
    for (const { rule } of matching) {
      const failure = this.drawFailure(rule, target);
      if (failure !== undefined) return { delayMs, failure, afterCommit: undefined, lostRaceAs500: false };
    }
    const afterCommit = this.drawAfterCommit(matching);
    const lostRaceAs500 = target.conditionalPut && matching.some(({ rule }) => this.happens(rule.lostRace500Rate));
    return { delayMs, failure: undefined, afterCommit, lostRaceAs500 };
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
  const status = rule.errorAfterCommitStatus;
  if (status !== undefined && !(AFTER_COMMIT_STATUSES as readonly unknown[]).includes(status)) {
    throw invalidArgument(`${where}: errorAfterCommitStatus must be one of ${AFTER_COMMIT_STATUSES.join(", ")}`, {
      errorAfterCommitStatus: status,
    });
  }
  return { ...rule, ...(rule.operations === undefined ? {} : { operations: [...rule.operations] }) };
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
