import { createHash } from "node:crypto";
import { SYNC_SHARED_RESULTS_BYTES_MAX, SYNC_SHARED_RESULTS_MAX } from "../base/index.js";
import type { KeyRange } from "../model/index.js";
import type { DiffState } from "./DiffState.js";

/** One query run as the sessions use it: the result already encoded once for every frame. */
export interface QueryResult {
  readonly kind: "ok" | "failed";
  /** The QueryUpdated `value` or QueryFailed `error` as JSON text, ready to splice into frames. */
  readonly payloadText: string;
  readonly hash: string;
  /** The error's code for a failed run (LOCAL_HISTORY_UNAVAILABLE makes the session refresh). */
  readonly errorCode: string | null;
  readonly readRanges: readonly KeyRange[];
  readonly readTs: number;
  /** For a session that takes diffs, a diffable result's state (its payloadText is the state's value text, its hash the checksum). */
  readonly diff?: DiffState;
}

interface Entry {
  readonly run: Promise<QueryResult>;
  /** Heap the settled result holds (0 while it runs). */
  bytes: number;
}

/**
 * What a subscription runs, as a fixed-size key: sha256 over the path and the arguments'
 * JSON text. Computed once when a query is subscribed, so neither a session nor the
 * shared runs keep the arguments' text (which may be large) per entry.
 */
export function subscriptionDigest(path: string, argsText: string): string {
  return createHash("sha256").update(path).update("\u0000").update(argsText).digest("base64url");
}

/**
 * Runs shared between sessions: identical subscriptions (same path, args and identity)
 * re-run once per timestamp, however many sessions hold them. Keyed by the ts, the
 * subscription's digest and the identity's key; the first caller's run is the one
 * everybody awaits.
 *
 * Invariants: at most SYNC_SHARED_RESULTS_MAX entries and SYNC_SHARED_RESULTS_BYTES_MAX
 * bytes of settled results (estimated: result text plus read ranges), evicted oldest
 * first (an evicted entry only costs a second run); a run that rejected is not kept; an
 * entry is a pure function of (key, ts), since a query reads a snapshot, so sharing
 * never changes a result.
 */
export class SharedQueryRuns {
  private readonly runs = new Map<string, Entry>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(
    private readonly entriesMax = SYNC_SHARED_RESULTS_MAX,
    private readonly bytesMax = SYNC_SHARED_RESULTS_BYTES_MAX,
  ) {}

  run(digest: string, identityKey: string, ts: number, execute: () => Promise<QueryResult>): Promise<QueryResult> {
    const key = `${ts}\u0000${digest}\u0000${identityKey}`;
    const shared = this.runs.get(key);
    if (shared !== undefined) {
      this.hits++;
      return shared.run;
    }
    this.misses++;
    const entry: Entry = { run: execute(), bytes: 0 };
    this.runs.set(key, entry);
    entry.run.then(
      (result) => this.settled(key, entry, result),
      () => this.remove(key, entry),
    );
    this.evict();
    return entry.run;
  }

  /**
   * Forgets every run: the store was replaced as a whole (a restore, or a rebuild after the
   * bucket went back to an older copy), so a result cached at a ts may no longer be the
   * state at that ts. A run still in flight settles into nothing (settled finds it gone).
   */
  clear(): void {
    this.runs.clear();
    this.bytes = 0;
  }

  get stats(): { readonly hits: number; readonly misses: number; readonly entries: number; readonly bytes: number } {
    return { hits: this.hits, misses: this.misses, entries: this.runs.size, bytes: this.bytes };
  }

  private settled(key: string, entry: Entry, result: QueryResult): void {
    if (this.runs.get(key) !== entry) return;
    entry.bytes = resultBytes(result);
    this.bytes += entry.bytes;
    this.evict();
  }

  private remove(key: string, entry: Entry): void {
    if (this.runs.get(key) !== entry) return;
    this.runs.delete(key);
    this.bytes -= entry.bytes;
  }

  private evict(): void {
    while (this.runs.size > this.entriesMax || (this.bytes > this.bytesMax && this.runs.size > 0)) {
      const [key, entry] = this.runs.entries().next().value!;
      this.remove(key, entry);
    }
  }
}

/** Per object and per range: what the fields beyond the text and key bytes cost (an estimate). */
const OBJECT_OVERHEAD_BYTES = 64;

/** Heap a settled result holds, estimated: UTF-16 text, key bytes, object overheads. */
function resultBytes(result: QueryResult): number {
  // A diff state holds each row's text again, and a key per row.
  let bytes = OBJECT_OVERHEAD_BYTES + 2 * (result.payloadText.length + result.hash.length) * (result.diff ? 2 : 1);
  for (const range of result.readRanges) bytes += OBJECT_OVERHEAD_BYTES + 2 * range.keyspace.length + range.start.byteLength + (range.end?.byteLength ?? 0);
  return bytes;
}
