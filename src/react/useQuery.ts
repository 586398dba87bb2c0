import { useMemo, useSyncExternalStore } from "react";
import type { ArgsOf, QueryReference, ResultOf } from "../client/index.js";
import { argsKey } from "./argsKey.js";
import { useCairnClient } from "./CairnProvider.js";
import { QuerySubscription } from "./QuerySubscription.js";
import { SKIPPED, type QueryState } from "./QueryState.js";

/** The arguments of a query hook: the query's arguments (optional when it takes none), or "skip" to subscribe to nothing. */
export type ArgsOrSkip<Ref extends QueryReference> = {} extends ArgsOf<Ref> ? [args?: ArgsOf<Ref> | "skip"] : [args: ArgsOf<Ref> | "skip"];

const skippedStore = {
  subscribe: () => () => {},
  getSnapshot: (): QueryState<never> => SKIPPED,
};

/**
 * The query's state, live: `{ status: "loading" | "success" | "error" | "skipped" }`
 * (QueryState). Re-subscribes when the arguments change by content, not by identity.
 */
export function useQueryState<Ref extends QueryReference>(ref: Ref, ...args: ArgsOrSkip<Ref>): QueryState<ResultOf<Ref>> {
  const client = useCairnClient();
  const given = args[0];
  const key = given === "skip" ? null : argsKey(given);
  // The key stands for `given`: a new object with equal content keeps the subscription.
  const store = useMemo(() => (given === "skip" ? skippedStore : new QuerySubscription(client, ref, given)), [client, ref.path, key]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
}

/**
 * The query's result, live: undefined while loading or skipped (`useQuery(ref, "skip")`).
 * A failed query throws its CairnError during render, for the nearest error boundary;
 * use `useQueryState` to handle the error in the component instead.
 */
export function useQuery<Ref extends QueryReference>(ref: Ref, ...args: ArgsOrSkip<Ref>): ResultOf<Ref> | undefined {
  const state = useQueryState(ref, ...args);
  switch (state.status) {
    case "success":
      return state.value;
    case "error":
      throw state.error;
    case "loading":
    case "skipped":
      return undefined;
  }
}
