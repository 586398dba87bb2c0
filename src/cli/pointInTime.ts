import { InvalidArgumentError } from "commander";

/**
 * Parsers for the history commands' arguments: a moment (`--at`) and a duration
 * (`--set` of `cairn retention`), each refused with a clear message when malformed.
 */

/**
 * A moment as a ts (hybrid-logical µs since the Unix epoch): an ISO 8601 date-time with a
 * time zone (`2026-12-06T18:00:00Z`, `…+01:00`), or a ts as Cairn prints them (digits).
 */
export function momentTs(value: string): number {
  if (/^\d+$/.test(value)) {
    const ts = Number(value);
    if (!Number.isSafeInteger(ts)) throw new InvalidArgumentError("expected a ts (µs since the Unix epoch) below 2^53");
    return ts;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    throw new InvalidArgumentError("expected an ISO 8601 date-time with a time zone (2026-12-06T18:00:00Z) or a ts in µs");
  }
  const [year, month, day, hour, minute] = value.split(/[-T:]/).map(Number) as [number, number, number, number, number];
  const second = Number(/T\d{2}:\d{2}:(\d{2})/.exec(value)?.[1] ?? 0);
  // Date.parse rolls 02-30 over into March: every field is checked against its calendar.
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) {
    throw new InvalidArgumentError(`${value} is not a valid date-time`);
  }
  const fraction = /\.(\d{1,6})/.exec(value)?.[1] ?? "";
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`${value} is not a valid date-time`);
  // Date keeps milliseconds; the µs digits past them are added back.
  return ms * 1000 + Number(fraction.padEnd(6, "0").slice(3));
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration: `0`, or a whole number with a unit (`ms`, `s`, `m`, `h`, `d`): `7d`, `36h`, `90m`. */
export function durationMs(value: string): number {
  if (value === "0") return 0;
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value);
  if (!match) throw new InvalidArgumentError("expected 0 or a whole number with a unit: 500ms, 30s, 90m, 36h, 7d");
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(ms)) throw new InvalidArgumentError("duration too long");
  return ms;
}

/** A duration that must be more than 0 (a ttl). */
export function positiveDurationMs(value: string): number {
  const ms = durationMs(value);
  if (ms === 0) throw new InvalidArgumentError("expected a duration above 0: 30m, 36h, 7d, …");
  return ms;
}

/** A duration for people: the largest unit that divides it. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0 (off)";
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** A ts for people: its ISO time and the ts itself. */
export function formatTs(ts: number): string {
  return `${new Date(Math.floor(ts / 1000)).toISOString()} (ts ${ts})`;
}
