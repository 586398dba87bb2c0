import { SYNC_SHARED_RESULTS_MAX } from "../base/index.js";
import type { KeyRange } from "../model/index.js";

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
}

/**
 * Runs shared between sessions: identical subscriptions (same path, args and identity)
 * re-run once per timestamp, however many sessions hold them. Keyed by the subscription
 * key and the ts; the first caller's run is the one everybody awaits.
 *
 * Invariants: at most SYNC_SHARED_RESULTS_MAX entries, evicted oldest first (an evicted
 * entry only costs a second run); an entry is a pure function of (key, ts), since a
 * query reads a snapshot, so sharing never changes a result.
 */
export class SharedQueryRuns {
  private readonly runs = new Map<string, Promise<QueryResult>>();
  private hits = 0;
  private misses = 0;

  run(subscriptionKey: string, ts: number, execute: () => Promise<QueryResult>): Promise<QueryResult> {
    const key = `${ts}\u0000${subscriptionKey}`;
    const shared = this.runs.get(key);
    if (shared !== undefined) {
      this.hits++;
      return shared;
    }
    this.misses++;
    const started = execute();
    this.runs.set(key, started);
    if (this.runs.size > SYNC_SHARED_RESULTS_MAX) this.runs.delete(this.runs.keys().next().value!);
    return started;
  }

  get stats(): { readonly hits: number; readonly misses: number } {
    return { hits: this.hits, misses: this.misses };
  }
}
