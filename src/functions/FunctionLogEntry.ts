import { hasErrorCode, LOG_TEXT_CHARS_MAX } from "../base/index.js";
import type { FunctionKind } from "./registration.js";

/**
 * One function call as it ended, as the admin API's LogEntry shows it (docs/admin-api.md)
 * without its `id`: the node's log ring numbers entries as it takes them (LogRing in
 * src/sync), so a runtime emits `FunctionLogEntry` and the ring holds and sends
 * `FunctionLogEntry & {id}`.
 *
 * Bounds (what keeps one entry small whatever a function prints or throws): a line, an
 * error message and a stack each keep their first LOG_TEXT_CHARS_MAX characters, then
 * `… [N chars cut]`; an entry keeps its first LOG_LINES_PER_CALL_MAX lines and counts the
 * rest in `truncatedLines`. So an entry's text is at most ~66 × 8 Ki characters (~0.5 MiB).
 */

/** The console methods a function prints with, as its lines' levels. */
export const CONSOLE_LEVELS = ["log", "info", "warn", "error", "debug"] as const;
export type ConsoleLevel = (typeof CONSOLE_LEVELS)[number];

/** An entry's level, lowest first: the order the `level` filter ("lowest level shown") compares in. */
export const LOG_ENTRY_LEVELS = ["info", "warn", "error"] as const;
export type LogEntryLevel = (typeof LOG_ENTRY_LEVELS)[number];


/** A line a function printed with `console.<level>`: `util.format` of its arguments, cut; `time` in ms since the epoch. */
export interface FunctionLogLine {
  readonly level: ConsoleLevel;
  readonly text: string;
  readonly time: number;
}

export interface FunctionLogError {
  readonly code: string;
  readonly message: string;
  /** Only for FUNCTION_FAILED: the stack of what the function's code threw. */
  readonly stack?: string;
}

export interface FunctionLogEntry {
  /** When the call ended, ms since the epoch. */
  readonly time: number;
  readonly requestId: string;
  readonly path: string;
  readonly kind: FunctionKind;
  readonly level: LogEntryLevel;
  readonly outcome: "ok" | "error";
  readonly durationMs: number;
  readonly error?: FunctionLogError;
  readonly lines: readonly FunctionLogLine[];
  /** Lines printed beyond the first LOG_LINES_PER_CALL_MAX (absent when none were). */
  readonly truncatedLines?: number;
}

/** A call that settled, in plain values: what `functionLogEntry` builds an entry from. */
export interface EndedCall {
  readonly time: number;
  readonly requestId: string;
  readonly path: string;
  readonly kind: FunctionKind;
  readonly durationMs: number;
  readonly outcome: { readonly kind: "ok" } | { readonly kind: "error"; readonly error: unknown };
  readonly lines: readonly FunctionLogLine[];
  readonly truncatedLines: number;
  /** The highest level printed, counting lines beyond the kept ones too (null: none printed at warn or error). */
  readonly loudestLine: "warn" | "error" | null;
}

export function functionLogEntry(call: EndedCall): FunctionLogEntry {
  const failed = call.outcome.kind === "error";
  const level: LogEntryLevel = failed || call.loudestLine === "error" ? "error" : call.loudestLine === "warn" ? "warn" : "info";
  return {
    time: call.time,
    requestId: call.requestId,
    // A call of an unknown function carries whatever the caller sent as its path.
    path: cutLogText(typeof call.path === "string" ? call.path : safeString(call.path)),
    kind: call.kind,
    level,
    outcome: failed ? "error" : "ok",
    durationMs: call.durationMs,
    ...(call.outcome.kind === "error" ? { error: logErrorOf(call.outcome.error) } : {}),
    lines: call.lines,
    ...(call.truncatedLines > 0 ? { truncatedLines: call.truncatedLines } : {}),
  };
}

/**
 * What a failure shows: its code and message; the stack only for FUNCTION_FAILED (its
 * `cause` is what the function's code threw). Any other CairnError is Cairn's own,
 * deliberate answer (a bad argument, an AppError, a timeout): its stack would show Cairn's
 * internals, not the function's bug. Something that is not a CairnError at all (which
 * the runtime does not let through) shows as INTERNAL.
 */
function logErrorOf(error: unknown): FunctionLogError {
  const { code, message } = (typeof error === "object" && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  const logged = {
    code: typeof code === "string" ? code : "INTERNAL",
    message: cutLogText(typeof message === "string" ? message : safeString(error)),
  };
  if (!hasErrorCode(error, "FUNCTION_FAILED")) return logged;
  return { ...logged, stack: cutLogText(stackOf((error as { cause?: unknown }).cause)) };
}

/** The thrown value's stack, as FunctionRuntime logs it: a non-Error value is named for what it is. */
export function stackOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.stack ?? `${thrown.name}: ${thrown.message}`;
  return `a non-Error value: ${safeString(thrown)}`;
}

/** String(value), also for values that refuse it (an object without a prototype, a throwing toString). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** `text` with at most LOG_TEXT_CHARS_MAX characters kept, then `… [N chars cut]`; never splits a surrogate pair. */
export function cutLogText(text: string): string {
  if (text.length <= LOG_TEXT_CHARS_MAX) return text;
  const kept = isHighSurrogate(text.charCodeAt(LOG_TEXT_CHARS_MAX - 1)) ? LOG_TEXT_CHARS_MAX - 1 : LOG_TEXT_CHARS_MAX;
  return `${text.slice(0, kept)}… [${text.length - kept} chars cut]`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
