import { invalidArgument } from "../../../src/base/errors.js";
import { SeededRandom, type Random } from "../../../src/base/random.js";
import { isS3Operation, type S3Operation } from "./operations.js";

/**
 * Fault injection (S3.md §6): latency, error answers, commit-then-drop and pause, chosen
 * per operation and key pattern, with randomness from a seed so that a failing run
 * replays.
 *
 * Invariants:
 * - Faults decide before the operation acts: an injected 503/500/409 means nothing
 *   happened; a drop means the operation acted in full and only the answer is lost.
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
}

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
  readonly dropAfterCommit: boolean;
}

interface ActiveRule {
  readonly rule: FaultRule;
  dropsLeft: number;
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
    this.active = copies.map((rule) => ({ rule, dropsLeft: rule.dropAfterCommit ?? 0 }));
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
      if (failure !== undefined) return { delayMs, failure, dropAfterCommit: false };
    }
    return { delayMs, failure: undefined, dropAfterCommit: this.drawDrop(matching) };
  }

  private drawFailure(rule: FaultRule, target: FaultTarget): InjectedFailure | undefined {
    if (this.happens(rule.error503Rate)) return "SlowDown";
    if (this.happens(rule.error500Rate)) return "InternalError";
    if (target.conditionalPut && this.happens(rule.conflict409Rate)) return "ConditionalRequestConflict";
    return undefined;
  }

  /** Rules decide in order: one with drops left consumes one; otherwise its rate may drop. */
  private drawDrop(matching: readonly ActiveRule[]): boolean {
    for (const active of matching) {
      if (active.dropsLeft > 0) {
        active.dropsLeft--;
        return true;
      }
      if (this.happens(active.rule.dropAfterCommitRate)) return true;
    }
    return false;
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
  for (const name of ["error503Rate", "error500Rate", "conflict409Rate", "dropAfterCommitRate"] as const) {
    const value = rule[name];
    if (value !== undefined && !(typeof value === "number" && value >= 0 && value <= 1)) {
      throw invalidArgument(`${where}: ${name} must be a number in [0, 1]`, { [name]: value });
    }
  }
  const drops = rule.dropAfterCommit;
  if (drops !== undefined && !(Number.isSafeInteger(drops) && drops >= 0)) {
    throw invalidArgument(`${where}: dropAfterCommit must be an integer >= 0`, { dropAfterCommit: drops });
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
