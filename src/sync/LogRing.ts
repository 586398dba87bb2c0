import { CairnError, LOG_RING_ENTRIES_MAX, LOG_RING_BYTES_MAX, LOG_QUERY_DEFAULT_LIMIT, LOG_QUERY_LIMIT_MAX, LOG_QUERY_TERM_CHARS_MAX } from "../base/index.js";
import { LOG_ENTRY_LEVELS, type FunctionLogEntry, type LogEntryLevel } from "../functions/index.js";
import type { LogEntry } from "./protocol.js";

/**
 * The node's function log: the newest entries of the calls it ran, numbered, for the
 * admin API's logs route and its live feeds (docs/admin-api.md, LogEntry).
 *
 * The ring numbers a runtime's FunctionLogEntry into the protocol's LogEntry (the same
 * fields and `id`), what the logs route and the LogEntries frames carry.
 *
 * Invariants:
 * - ids increase by one per entry taken, from 1; entries are held oldest first.
 * - after `add` returns, the ring holds at most `entriesMax` entries whose JSON takes at
 *   most `bytesMax` bytes (UTF-8), evicting the oldest; `dropped` counts every entry
 *   evicted, so `dropped + size` is the number of entries ever taken. An entry larger than
 *   `bytesMax` by itself is handed to the listeners and then evicted at once.
 * - listeners see every entry, in id order, as it is taken.
 */

export interface LogQuery {
  /** An exact function path, or a prefix ending ":" (a module: "messages:"). Empty: every function. */
  readonly function?: string;
  /** The lowest level shown ("warn": warn and error entries). Empty: every level. */
  readonly level?: string;
  /** Case-insensitive substring of the path, request id, a line or the error (message, stack). Empty: no filter. */
  readonly text?: string;
  /** How many entries at most, the newest (default LOG_QUERY_DEFAULT_LIMIT, at most LOG_QUERY_LIMIT_MAX). */
  readonly limit?: number;
}

export interface LogQueryResult {
  /** Newest last. */
  readonly entries: LogEntry[];
  /** Entries evicted from the ring so far. */
  readonly dropped: number;
}

export interface LogRingOptions {
  /** Entries kept (default LOG_RING_ENTRIES_MAX). */
  readonly entriesMax?: number;
  /** Bytes of the entries' JSON kept (default LOG_RING_BYTES_MAX). */
  readonly bytesMax?: number;
}

/** Sees each entry as it is taken, with the bytes of its JSON. Must not throw (what it throws reaches `add`'s caller after every listener ran). */
export type LogListener = (entry: LogEntry, bytes: number) => void;


interface Held {
  readonly entry: LogEntry;
  readonly bytes: number;
}

export class LogRing {
  private readonly entriesMax: number;
  private readonly bytesMax: number;
  /** Oldest first from `head`; the slots before it are evicted and compacted away now and then. */
  private held: Held[] = [];
  private head = 0;
  private heldBytes = 0;
  private nextId = 1;
  private evicted = 0;
  private readonly listeners = new Set<LogListener>();

  constructor(options: LogRingOptions = {}) {
    this.entriesMax = positiveInteger(options.entriesMax ?? LOG_RING_ENTRIES_MAX, "entriesMax");
    this.bytesMax = positiveInteger(options.bytesMax ?? LOG_RING_BYTES_MAX, "bytesMax");
  }

  /** Entries held now. */
  get size(): number {
    return this.held.length - this.head;
  }

  /** Bytes of the held entries' JSON. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Entries evicted so far. */
  get dropped(): number {
    return this.evicted;
  }

  /** Numbers `entry`, keeps it (evicting the oldest past the bounds) and hands it to every listener. */
  add(entry: FunctionLogEntry): LogEntry {
    const numbered: LogEntry = { id: this.nextId++, ...entry };
    const bytes = Buffer.byteLength(JSON.stringify(numbered));
    this.held.push({ entry: numbered, bytes });
    this.heldBytes += bytes;
    while (this.size > this.entriesMax || (this.heldBytes > this.bytesMax && this.size > 0)) this.evictOldest();
    this.notify(numbered, bytes);
    return numbered;
  }

  /** Calls `listener` with every entry taken from now on, until the returned function is called. */
  subscribe(listener: LogListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The newest `count` entries, newest last; with `bytesMax`, only as many of the newest
   * as fit in it (but always the newest one, if any).
   */
  newest(count: number, bytesMax = Number.POSITIVE_INFINITY): LogEntry[] {
    if (!Number.isSafeInteger(count) || count < 0) throw new CairnError("INVALID_ARGUMENT", `count must be a non-negative integer, not ${String(count)}`);
    const found: LogEntry[] = [];
    let bytes = 0;
    for (let index = this.held.length - 1; index >= this.head && found.length < count; index--) {
      const { entry, bytes: entryBytes } = this.held[index]!;
      if (found.length > 0 && bytes + entryBytes > bytesMax) break;
      bytes += entryBytes;
      found.push(entry);
    }
    return found.reverse();
  }

  /** The newest entries that pass every filter of `query`, newest last (INVALID_ARGUMENT for a bad filter). */
  query(query: LogQuery = {}): LogQueryResult {
    const matches = entryFilter(query);
    const limit = limitOf(query.limit);
    const found: LogEntry[] = [];
    for (let index = this.held.length - 1; index >= this.head && found.length < limit; index--) {
      const { entry } = this.held[index]!;
      if (matches(entry)) found.push(entry);
    }
    return { entries: found.reverse(), dropped: this.evicted };
  }

  private evictOldest(): void {
    const oldest = this.held[this.head]!;
    this.held[this.head] = undefined as never;
    this.head++;
    this.heldBytes -= oldest.bytes;
    this.evicted++;
    // Compacted once the evicted slots are half the array: each entry is moved O(1) times on average.
    if (this.head >= 1024 && this.head * 2 >= this.held.length) {
      this.held = this.held.slice(this.head);
      this.head = 0;
    }
  }

  private notify(entry: LogEntry, bytes: number): void {
    let failure: { readonly error: unknown } | null = null;
    for (const listener of [...this.listeners]) {
      try {
        listener(entry, bytes);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== null) throw failure.error;
  }
}

/** One predicate for a query's filters, checked once up front. */
function entryFilter(query: LogQuery): (entry: LogEntry) => boolean {
  const path = filterTerm(query.function, "function");
  const level = levelOf(query.level);
  const text = filterTerm(query.text, "text")?.toLowerCase() ?? null;
  const lowestLevel = level === null ? 0 : LOG_ENTRY_LEVELS.indexOf(level);
  const pathMatches = path === null ? () => true : path.endsWith(":") ? (entryPath: string) => entryPath.startsWith(path) : (entryPath: string) => entryPath === path;
  return (entry) =>
    pathMatches(entry.path) && LOG_ENTRY_LEVELS.indexOf(entry.level) >= lowestLevel && (text === null || mentions(entry, text));
}

/** Whether `lowerText` is in the entry's path, request id, a line, or its error's message or stack, ignoring case. */
function mentions(entry: LogEntry, lowerText: string): boolean {
  const has = (haystack: string | undefined) => haystack !== undefined && haystack.toLowerCase().includes(lowerText);
  return (
    has(entry.path) ||
    has(entry.requestId) ||
    entry.lines.some((line) => has(line.text)) ||
    has(entry.error?.message) ||
    has(entry.error?.stack)
  );
}

function filterTerm(value: unknown, name: string): string | null {
  if (value === undefined || value === "") return null;
  if (typeof value !== "string" || value.length > LOG_QUERY_TERM_CHARS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `the ${name} filter must be a string of at most ${LOG_QUERY_TERM_CHARS_MAX} characters`, { details: { filter: name } });
  }
  return value;
}

function levelOf(value: unknown): LogEntryLevel | null {
  if (value === undefined || value === "") return null;
  if (typeof value === "string" && (LOG_ENTRY_LEVELS as readonly string[]).includes(value)) return value as LogEntryLevel;
  throw new CairnError("INVALID_ARGUMENT", `the level filter must be one of ${LOG_ENTRY_LEVELS.join(", ")}, not ${JSON.stringify(String(value)).slice(0, 100)}`, {
    details: { filter: "level" },
  });
}

function limitOf(value: unknown): number {
  if (value === undefined) return LOG_QUERY_DEFAULT_LIMIT;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 1 && value <= LOG_QUERY_LIMIT_MAX) return value;
  throw new CairnError("INVALID_ARGUMENT", `limit must be an integer from 1 to ${LOG_QUERY_LIMIT_MAX}, not ${JSON.stringify(String(value)).slice(0, 100)}`, {
    details: { filter: "limit" },
  });
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new CairnError("INVALID_ARGUMENT", `${name} must be a positive integer, not ${String(value)}`);
  return value;
}
