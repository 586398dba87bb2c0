import type { LogEntry, LogLevel } from "./adminTypes.js";

/**
 * The logs' filters, as `GET /api/admin/logs` applies them, applied the same way to the
 * live stream: `function` an exact path or a prefix ending ":", `level` the lowest level
 * shown, `text` a case-insensitive substring of the path, request id, lines and error.
 */
export interface LogFilter {
  readonly function: string;
  readonly level: LogLevel;
  readonly text: string;
}

export const NO_FILTER: LogFilter = { function: "", level: "info", text: "" };

const LEVEL_RANK: Readonly<Record<LogLevel, number>> = { info: 0, warn: 1, error: 2 };

export function matchesFilter(entry: LogEntry, filter: LogFilter): boolean {
  const fn = filter.function.trim();
  if (fn !== "" && (fn.endsWith(":") ? !entry.path.startsWith(fn) : entry.path !== fn)) return false;
  if ((LEVEL_RANK[entry.level] ?? 0) < LEVEL_RANK[filter.level]) return false;
  const text = filter.text.trim().toLowerCase();
  if (text === "") return true;
  const haystacks = [entry.path, entry.requestId, entry.error?.code ?? "", entry.error?.message ?? "", entry.error?.stack ?? "", ...entry.lines.map((line) => line.text)];
  return haystacks.some((haystack) => haystack.toLowerCase().includes(text));
}

/** `entries` and `more` as one list in id order, each id once, the newest `max` kept. */
export function mergeEntries(entries: readonly LogEntry[], more: readonly LogEntry[], max: number): LogEntry[] {
  if (more.length === 0) return entries.length > max ? entries.slice(-max) : (entries as LogEntry[]);
  const lastId = entries.length > 0 ? entries[entries.length - 1]!.id : -Infinity;
  // The common case, a live batch after what is shown: appended without a sort.
  const merged = more.every((entry, index) => entry.id > lastId && (index === 0 || entry.id > more[index - 1]!.id))
    ? [...entries, ...more]
    : [...new Map([...entries, ...more].map((entry) => [entry.id, entry])).values()].sort((left, right) => left.id - right.id);
  return merged.length > max ? merged.slice(-max) : merged;
}
