import type { Value } from "../model/Value.js";
import type { ArgsOf, ArgsParameter, FunctionReference, QueryReference, ResultOf } from "./api.js";
import { encodeArgs } from "./encodeArgs.js";
import type { QueryResult } from "./QueryResult.js";
import { queryToken, type QueryToken } from "./QueryToken.js";

/**
 * Optimistic updates: a mutation may carry a function that edits the client's query
 * results as if the mutation had already committed, so a UI shows its effect at once.
 *
 * Invariants:
 * - the visible results are the server results with every pending update applied, in
 *   the order the mutations were made, re-applied from scratch whenever server results
 *   or the set of pending updates change (so an update never sees its own earlier output);
 * - an update is pending from its mutation's call until the mutation fails or the
 *   client's version covers its commit timestamp (when its promise resolves).
 */

/** What an optimistic update reads and writes: the client's query results. */
export interface OptimisticLocalStore {
  /** The query's current result (server result with earlier updates applied); undefined while loading or failed. */
  getQuery<Ref extends QueryReference>(ref: Ref, ...args: ArgsParameter<Ref>): ResultOf<Ref> | undefined;
  /** Replaces the query's visible result (undefined: loading). Queries nobody subscribes to are ignored. */
  setQuery<Ref extends QueryReference>(ref: Ref, args: ArgsOf<Ref>, value: ResultOf<Ref> | undefined): void;
}

/** Values read from the store are shared with other listeners: treat them as immutable and set new ones. */
export type OptimisticUpdate<Args> = (localStore: OptimisticLocalStore, args: Args) => void;

interface PendingUpdate {
  readonly requestId: number;
  readonly update: OptimisticUpdate<any>;
  readonly args: unknown;
}

export class OptimisticUpdates {
  /** In mutation order (requestIds increase). */
  private pending: PendingUpdate[] = [];

  get size(): number {
    return this.pending.length;
  }

  add(requestId: number, update: OptimisticUpdate<any>, args: unknown): void {
    this.pending.push({ requestId, update, args });
  }

  /** Drops the update of this mutation; whether it had one. */
  drop(requestId: number): boolean {
    const before = this.pending.length;
    this.pending = this.pending.filter((pending) => pending.requestId !== requestId);
    return this.pending.length !== before;
  }

  /**
   * `serverResults` (not modified) with every pending update applied in order. An update
   * that throws is reported and what it set before throwing stays.
   */
  layer(serverResults: ReadonlyMap<QueryToken, QueryResult>, reportError: (error: unknown) => void): Map<QueryToken, QueryResult> {
    const working = new Map(serverResults);
    const store = new LayeredStore(working);
    for (const { update, args } of this.pending) {
      try {
        update(store, args);
      } catch (error) {
        reportError(error);
      }
    }
    return working;
  }
}

class LayeredStore implements OptimisticLocalStore {
  constructor(private readonly working: Map<QueryToken, QueryResult>) {}

  getQuery<Ref extends QueryReference>(ref: Ref, ...args: ArgsParameter<Ref>): ResultOf<Ref> | undefined {
    const result = this.working.get(tokenOf(ref, args[0]));
    return result?.kind === "value" ? (result.value as ResultOf<Ref>) : undefined;
  }

  setQuery<Ref extends QueryReference>(ref: Ref, args: ArgsOf<Ref>, value: ResultOf<Ref> | undefined): void {
    const token = tokenOf(ref, args);
    if (value === undefined) this.working.delete(token);
    else this.working.set(token, { kind: "value", value: value as Value });
  }
}

function tokenOf(ref: FunctionReference, args: unknown): QueryToken {
  return queryToken(ref.path, encodeArgs(args));
}
