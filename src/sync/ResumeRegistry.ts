import { type Clock, SYNC_RESUME_BYTES_MAX, SYNC_RESUME_QUERIES_MAX, SYNC_RESUME_SESSIONS_MAX, SYNC_RESUME_TTL_MS } from "../base/index.js";
import type { KeyRange } from "../model/index.js";
import type { DiffState } from "./DiffState.js";

/** The read ranges of a registered query. */
export function rangesOf(query: ResumableQuery): readonly KeyRange[] {
  return query.readRanges ?? query.diff!.readRanges();
}

/** A query of a closed session, as a reconnecting client may claim it. */
export interface ResumableQuery {
  /** subscriptionDigest(path, args text): what the client re-adds. */
  readonly digest: string;
  /** The identity key it ran as: claimed only by a session running as the same. */
  readonly identityKey: string;
  /** The hash of the result last sent: claimed only by a client holding it. */
  readonly hash: string;
  /** A ts the result was the query's result at (the session's sent version). */
  readonly validTs: number;
  /**
   * What the result depends on: unchanged since `validTs` means unchanged result. Null
   * for a diffable result: its state gives them when claimed (`rangesOf`), so a closed
   * session keeps no copy of a 500-row page's 501 ranges.
   */
  readonly readRanges: readonly KeyRange[] | null;
  /** A session that took diffs: the result's diff state. */
  readonly diff: DiffState | null;
}

interface Registration {
  readonly expiresAtMs: number;
  readonly queries: Map<string, ResumableQuery>;
  readonly bytes: number;
}

/** Per query and per range: what the fields beyond the ranges' key bytes cost (an estimate). */
const QUERY_OVERHEAD_BYTES = 256;
const RANGE_OVERHEAD_BYTES = 96;

/**
 * Closed sessions' subscriptions, kept SYNC_RESUME_TTL_MS so that a client reconnecting
 * with its last session's id (Connect `resume`) is answered QueryUnchanged for every
 * query no commit touched since, without running it (issue 30, resume). The id is the
 * capability: a random id only the client and this node know; the identity and the
 * held hash are checked per query as well, so a claim never tells anything the claimant
 * did not already hold.
 *
 * Invariants: at most SYNC_RESUME_SESSIONS_MAX registrations, SYNC_RESUME_QUERIES_MAX
 * queries and SYNC_RESUME_BYTES_MAX (estimated) in all, the oldest dropped first; a
 * registration is claimed at most once, and never after it expired.
 */
export class ResumeRegistry {
  private readonly sessions = new Map<string, Registration>();
  private queries = 0;
  private bytes = 0;
  /** Diff states the registrations hold, counted: one state shared by many sessions is charged once. */
  private readonly states = new Map<DiffState, number>();

  constructor(private readonly clock: Clock) {}

  register(sessionId: string, queries: readonly ResumableQuery[]): void {
    this.drop(sessionId);
    if (queries.length === 0 || queries.length > SYNC_RESUME_QUERIES_MAX) return;
    let bytes = 0;
    const byDigest = new Map<string, ResumableQuery>();
    for (const query of queries) {
      bytes += QUERY_OVERHEAD_BYTES + 2 * (query.digest.length + query.hash.length + query.identityKey.length);
      for (const range of query.readRanges ?? []) bytes += RANGE_OVERHEAD_BYTES + range.start.byteLength + (range.end?.byteLength ?? 0);
      byDigest.set(query.digest, query);
    }
    if (bytes > SYNC_RESUME_BYTES_MAX) return;
    this.sessions.set(sessionId, { expiresAtMs: this.clock.monotonicMs() + SYNC_RESUME_TTL_MS, queries: byDigest, bytes });
    this.queries += byDigest.size;
    this.bytes += bytes;
    for (const query of byDigest.values()) if (query.diff !== null) this.holdState(query.diff, 1);
    this.evict();
  }

  /** The registration of `sessionId`, removed (null: none, or expired). */
  claim(sessionId: string): Map<string, ResumableQuery> | null {
    this.evict();
    const registration = this.sessions.get(sessionId);
    if (registration === undefined) return null;
    this.drop(sessionId);
    return registration.queries;
  }

  /** Forgets everything: the store or the code was replaced, so no registered result is known to stand. */
  clear(): void {
    this.sessions.clear();
    this.states.clear();
    this.queries = 0;
    this.bytes = 0;
  }

  get stats(): { readonly sessions: number; readonly queries: number; readonly bytes: number } {
    return { sessions: this.sessions.size, queries: this.queries, bytes: this.bytes };
  }

  private drop(sessionId: string): void {
    const registration = this.sessions.get(sessionId);
    if (registration === undefined) return;
    this.sessions.delete(sessionId);
    this.queries -= registration.queries.size;
    this.bytes -= registration.bytes;
    for (const query of registration.queries.values()) if (query.diff !== null) this.holdState(query.diff, -1);
  }

  /** Counts a registration's hold on a diff state; its rows' heap is charged while any holds it. */
  private holdState(state: DiffState, change: 1 | -1): void {
    const holders = (this.states.get(state) ?? 0) + change;
    if (holders === 0) {
      this.states.delete(state);
      this.bytes -= state.bytes;
    } else {
      if (holders === 1 && change === 1) this.bytes += state.bytes;
      this.states.set(state, holders);
    }
  }

  /** Drops expired registrations and, past the bounds, the oldest (registrations are kept in the order they came). */
  private evict(): void {
    const now = this.clock.monotonicMs();
    for (const [sessionId, registration] of this.sessions) {
      const over = this.sessions.size > SYNC_RESUME_SESSIONS_MAX || this.queries > SYNC_RESUME_QUERIES_MAX || this.bytes > SYNC_RESUME_BYTES_MAX;
      if (!over && registration.expiresAtMs > now) break;
      this.drop(sessionId);
    }
  }
}
