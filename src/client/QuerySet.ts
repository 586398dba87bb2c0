import { CairnError, MESSAGE_BYTES_MAX, SESSION_QUERIES_MAX } from "../base/index.js";
import type { Value } from "../model/Value.js";
import { decodeValue, type JsonValue } from "../model/ValueJson.js";
import { errorFromPayload, type ClientMessage, type QueryModification } from "../sync/protocol.js";
import type { EncodedArgs } from "./encodeArgs.js";
import { FRAME_OVERHEAD_BYTES, QUERY_ENTRY_OVERHEAD_BYTES } from "./limits.js";
import type { QueryResult } from "./QueryResult.js";
import { queryToken, type QueryToken } from "./QueryToken.js";
import { applyDiff, heldRowsOf, valueOf, type HeldRows } from "./DiffedRows.js";

/**
 * The client's subscriptions and the server's results for them.
 *
 * Invariants:
 * - one query per distinct (path, encoded args text), with one client-chosen queryId,
 *   increasing and never reused; it stays in the set while it has at least one listener;
 * - `querySetNumber` counts the ModifyQuerySet frames sent on the current connection,
 *   so the next one builds on it (the server starts every connection at 0);
 * - a server result is kept across reconnects with its hash, so the re-sent query set
 *   names it and a QueryUnchanged answer keeps it.
 */

type ModifyQuerySet = Extract<ClientMessage, { type: "ModifyQuerySet" }>;

export interface QueryListener {
  readonly onUpdate: (value: Value) => void;
  readonly onError: (error: CairnError) => void;
}

/** One call of `subscribe`: a listener of one query, and what it was last told. */
export interface Subscription {
  readonly query: Query;
  readonly listener: QueryListener;
  active: boolean;
  lastSeen: QueryResult | undefined;
}

export interface Query {
  readonly queryId: number;
  readonly token: QueryToken;
  readonly path: string;
  readonly args: JsonValue;
  /** An upper bound of its entry's UTF-8 bytes in a ModifyQuerySet (3 bytes per UTF-16 unit). */
  readonly entryBytesMax: number;
  readonly subscriptions: Set<Subscription>;
  /** The server's latest result and its hash (and, for a diffable result, its rows); undefined until the first arrives. */
  server: { readonly result: QueryResult; readonly hash: string; readonly rows?: HeldRows } | undefined;
  /** A diff did not add up: a ResetQuery is out, and diffs are ignored until the whole result comes. */
  resetPending: boolean;
}

export class QuerySet {
  private readonly byToken = new Map<QueryToken, Query>();
  private readonly byId = new Map<number, Query>();
  private nextQueryId = 1;
  private querySetNumber = 0;

  /** Adds a listener; `added` is the query when it is new to the set (to be sent to the server). */
  add(path: string, args: EncodedArgs, listener: QueryListener): { subscription: Subscription; added: Query | null } {
    const token = queryToken(path, args);
    let query = this.byToken.get(token);
    const added = query === undefined;
    if (query === undefined) {
      if (this.byId.size >= SESSION_QUERIES_MAX) {
        throw new CairnError("SESSION_LIMIT_EXCEEDED", `a client subscribes to at most ${SESSION_QUERIES_MAX} distinct queries`, {
          details: { queriesMax: SESSION_QUERIES_MAX },
        });
      }
      const entryBytesMax = (args.text.length + path.length) * 3 + QUERY_ENTRY_OVERHEAD_BYTES;
      query = { queryId: this.nextQueryId++, token, path, args: args.json, entryBytesMax, subscriptions: new Set(), server: undefined, resetPending: false };
      this.byToken.set(token, query);
      this.byId.set(query.queryId, query);
    }
    const subscription: Subscription = { query, listener, active: true, lastSeen: undefined };
    query.subscriptions.add(subscription);
    return { subscription, added: added ? query : null };
  }

  /** Removes a listener; returns its query when that was the query's last listener (now gone). */
  remove(subscription: Subscription): Query | null {
    if (!subscription.active) return null;
    subscription.active = false;
    const { query } = subscription;
    query.subscriptions.delete(subscription);
    if (query.subscriptions.size > 0) return null;
    this.byToken.delete(query.token);
    this.byId.delete(query.queryId);
    return query;
  }

  /** The next ModifyQuerySet of this connection, adding and removing these queries. */
  modify(add: readonly Query[], remove: readonly Query[]): ModifyQuerySet {
    const baseVersion = this.querySetNumber++;
    return {
      type: "ModifyQuerySet",
      baseVersion,
      newVersion: this.querySetNumber,
      add: add.map((query) => ({ queryId: query.queryId, path: query.path, args: query.args })),
      remove: remove.map((query) => query.queryId),
    };
  }

  /**
   * The first ModifyQuerySets of a new connection: every query, with the hash of the
   * result held, in as many frames as keep each under MESSAGE_BYTES_MAX (queries each
   * small enough for a frame may together be too large for one, and a frame over the
   * limit would close the connection and be sent again at every reconnect). At least one
   * frame, even with no queries: its Transition brings the session's first ts.
   */
  resubscribeAll(): ModifyQuerySet[] {
    this.querySetNumber = 0;
    const frames: ModifyQuerySet[] = [];
    let batch: Query[] = [];
    let batchBytes = FRAME_OVERHEAD_BYTES;
    const flush = () => {
      frames.push({ ...this.modify([], []), add: batch.map(subscribeEntry) });
      batch = [];
      batchBytes = FRAME_OVERHEAD_BYTES;
    };
    for (const query of this.byId.values()) {
      if (batch.length > 0 && batchBytes + query.entryBytesMax > MESSAGE_BYTES_MAX) flush();
      batch.push(query);
      batchBytes += query.entryBytesMax;
    }
    flush();
    return frames;
  }

  /**
   * Applies a Transition's modifications to the server results (unknown queryIds were
   * removed here). Returns the queries whose result must be asked for whole (ResetQuery):
   * a diff that did not add up to its checksum, or came for a result held without rows.
   */
  apply(modifications: readonly QueryModification[]): Query[] {
    const resets: Query[] = [];
    for (const modification of modifications) {
      const query = this.byId.get(modification.queryId);
      if (query !== undefined && !applyModification(query, modification)) {
        query.resetPending = true;
        resets.push(query);
      }
    }
    return resets;
  }

  queries(): IterableIterator<Query> {
    return this.byId.values();
  }

  /** The server results by token, for optimistic layering. */
  serverResults(): Map<QueryToken, QueryResult> {
    const results = new Map<QueryToken, QueryResult>();
    for (const query of this.byId.values()) if (query.server !== undefined) results.set(query.token, query.server.result);
    return results;
  }
}

function subscribeEntry(query: Query): ModifyQuerySet["add"][number] {
  const entry = { queryId: query.queryId, path: query.path, args: query.args };
  // A result whose diff did not add up is not named: the server sends it whole.
  const suspect = query.resetPending;
  query.resetPending = false;
  return query.server === undefined || suspect ? entry : { ...entry, resultHash: query.server.hash };
}

/** Applies one modification; false when the query's result must be reset (a diff that does not apply). */
function applyModification(query: Query, modification: QueryModification): boolean {
  switch (modification.type) {
    case "QueryUpdated": {
      query.resetPending = false;
      if (modification.rows === undefined) {
        query.server = { result: decodedResult(modification.value), hash: modification.hash };
        return true;
      }
      const rows = heldRowsOf(modification.rows, modification.value, modification.hash);
      // Rows that do not add up to the hash are kept as a plain result: shown, never diffed.
      query.server = rows === null ? { result: decodedResult(modification.value), hash: modification.hash } : { result: { kind: "value", value: valueOf(rows) }, hash: modification.hash, rows };
      return true;
    }
    case "QueryDiff": {
      if (query.resetPending) return true;
      const rows = query.server?.rows;
      const applied = rows === undefined ? null : applyDiff(rows, modification);
      if (applied === null) return false;
      query.server = { result: { kind: "value", value: applied.value }, hash: modification.checksum, rows: applied.rows };
      return true;
    }
    case "QueryFailed":
      query.resetPending = false;
      query.server = { result: { kind: "error", error: errorFromPayload(modification.error) }, hash: modification.hash };
      return true;
    case "QueryUnchanged":
      // The server matched our hash: the result held stands (with its rows). Without one there is nothing to keep.
      if (query.server !== undefined) query.server = { ...query.server, hash: modification.hash };
      return true;
    case "QueryRemoved":
      query.server = undefined;
      return true;
  }
}

/** A value that does not decode becomes the query's error, so its listeners hear of it. */
function decodedResult(json: unknown): QueryResult {
  try {
    return { kind: "value", value: decodeValue(json) };
  } catch (error) {
    return { kind: "error", error: error as CairnError };
  }
}
