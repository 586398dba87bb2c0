import type { WireValue } from "./adminTypes.js";

/** How values, times and sizes read on the page. */

/** A value shortened to `max` characters of its JSON (strings without their quotes). */
export function shortValue(value: WireValue | undefined, max = 80): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? "undefined";
}

/** A wall-clock time (ms since the epoch) as local date and time to the millisecond. */
export function clockTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const date = new Date(ms);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** Only the time of day, for dense lists (logs). */
export function timeOfDay(ms: number): string {
  return clockTime(ms).slice(11);
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1_000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** How far `ms` lies from `now`: "in 4.2 s", "12 s ago". */
export function relative(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const delta = ms - now;
  return delta >= 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
}

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : n.toLocaleString("en-US");
}

/** A text cut to `max` characters, with how much was left out. */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} chars not shown]`;
}
