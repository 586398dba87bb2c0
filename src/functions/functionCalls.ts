import { AsyncLocalStorage } from "node:async_hooks";
import { format } from "node:util";
import { LOG_LINES_PER_CALL_MAX, type Clock } from "../base/index.js";
import { CONSOLE_LEVELS, cutLogText, functionLogEntry, type ConsoleLevel, type FunctionLogEntry, type FunctionLogLine } from "./FunctionLogEntry.js";
import type { FunctionKind } from "./registration.js";

/**
 * Which function call the code running now belongs to: its path and request id, carried
 * through every await of the call (AsyncLocalStorage), and the record of the top-level
 * call it is part of, which collects what it prints. The id names the call in the
 * server's log and in what the client is told when the function fails; a call an action
 * makes (its runQuery) keeps its caller's id and record.
 *
 * Only an action calls functions. A call that starts while a query or mutation is the
 * current call did not come from it: the context leaked into work the call merely
 * kicked off (a mutation's commit starts the engine's flush loop, whose applied segments
 * re-run subscriptions), so it is a top-level call of its own. So is a call while
 * another runtime's call is current (two nodes in one process), or after the current
 * call ended (work an abandoned handler keeps doing).
 */
export interface FunctionCall {
  readonly path: string;
  readonly kind: FunctionKind;
  readonly requestId: string;
  readonly record: CallRecord;
}

/** How a runtime starts a top-level call. */
export interface CallStart {
  /** The runtime starting it: only its own calls are nested in each other. */
  readonly owner: object;
  /** Times the call's lines (wall clock) and its duration (monotonic). */
  readonly clock: Clock;
  /** Whether its console lines also go to the real console (prefixed), or only into its record. */
  readonly echo: boolean;
  newRequestId(): string;
}

/**
 * What one top-level call printed, nested calls' lines included: the first
 * LOG_LINES_PER_CALL_MAX lines, each cut to LOG_TEXT_CHARS_MAX characters, and a count of
 * the rest. Once ended it takes nothing more (its entry is out).
 */
export class CallRecord {
  readonly lines: FunctionLogLine[] = [];
  truncatedLines = 0;
  /** The highest level printed, lines past the kept ones included. */
  loudestLine: "warn" | "error" | null = null;
  private ended = false;
  private readonly startedMs: number;

  constructor(
    readonly owner: object,
    readonly requestId: string,
    readonly clock: Clock,
    readonly echo: boolean,
  ) {
    this.startedMs = clock.monotonicMs();
  }

  get open(): boolean {
    return !this.ended;
  }

  /** Records a line; `text` is called only if the line is kept (a flood of lines past the bound costs no formatting). */
  add(level: ConsoleLevel, text: () => string): void {
    if (this.ended) return;
    if (level === "error") this.loudestLine = "error";
    else if (level === "warn" && this.loudestLine === null) this.loudestLine = "warn";
    if (this.lines.length >= LOG_LINES_PER_CALL_MAX) {
      this.truncatedLines++;
      return;
    }
    this.lines.push({ level, text: cutLogText(text()), time: this.clock.nowMs() });
  }

  /** Ends the record; returns how long the call ran, in ms on the monotonic clock. */
  end(): number {
    this.ended = true;
    return this.clock.monotonicMs() - this.startedMs;
  }
}

const calls = new AsyncLocalStorage<FunctionCall>();

export function currentFunctionCall(): FunctionCall | undefined {
  return calls.getStore();
}

/**
 * Runs `run` as a call of `path`: nested in the current call when that is an open action
 * of the same runtime (`run` gets null), else as a top-level call with a new request id
 * and record (`run` gets the record, to end and report when the call settles).
 */
export function runAsFunctionCall<T>(path: string, kind: FunctionKind, start: CallStart, run: (topLevel: CallRecord | null) => T): T {
  const running = calls.getStore();
  if (running !== undefined && running.kind === "action" && running.record.owner === start.owner && running.record.open) {
    return calls.run({ path, kind, requestId: running.requestId, record: running.record }, () => run(null));
  }
  const record = new CallRecord(start.owner, start.newRequestId(), start.clock, start.echo);
  return calls.run({ path, kind, requestId: record.requestId, record }, () => run(record));
}

/**
 * `run`; once it settles, a top-level call's record is ended and its entry handed to
 * `onEnded` (before the caller sees the outcome). A nested call (record null) reports
 * nothing: its lines are in its action's entry; nor does any call when nobody listens
 * (`onEnded` null: no entry is built). `failureOf` finds the failure a value reports
 * instead of throwing (a recorded query run); by default a value is a success.
 */
export function reportWhenSettled<T>(
  record: CallRecord | null,
  call: { readonly path: string; readonly kind: FunctionKind },
  run: Promise<T>,
  onEnded: ((entry: FunctionLogEntry) => void) | null,
  failureOf: (value: T) => { readonly error: unknown } | null = () => null,
): Promise<T> {
  if (record === null || onEnded === null) return run;
  const ended = (failure: { readonly error: unknown } | null) => {
    const durationMs = record.end();
    onEnded(
      functionLogEntry({
        ...call,
        time: record.clock.nowMs(),
        requestId: record.requestId,
        durationMs,
        outcome: failure === null ? { kind: "ok" } : { kind: "error", error: failure.error },
        lines: record.lines,
        truncatedLines: record.truncatedLines,
        loudestLine: record.loudestLine,
      }),
    );
  };
  return run.then(
    (value) => {
      ended(failureOf(value));
      return value;
    },
    (error: unknown) => {
      ended({ error });
      throw error;
    },
  );
}

let consolePatched = false;

/**
 * From now on, what a function prints with `console.*` goes into its call's record and,
 * if the runtime that started the call echoes, to the real console prefixed with its path
 * and request id (`[messages:send 3f9a…] …`), so that a line in a busy server's log can
 * be traced to its call. Output outside any function call is left alone. Idempotent: the
 * patch is process-wide, and each call's record says what its own runtime wants.
 */
export function prefixConsoleInFunctions(): void {
  if (consolePatched) return;
  consolePatched = true;
  for (const method of CONSOLE_LEVELS) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const call = calls.getStore();
      if (call === undefined) return original(...args);
      let text: string | null = null;
      const formatted = () => (text ??= format(...args));
      call.record.add(method, formatted);
      if (call.record.echo) original(`[${call.path} ${call.requestId}] ${formatted()}`);
    };
  }
}
