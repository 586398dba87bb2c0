import { useMemo } from "react";
import type { ActionReference, ArgsParameter, ResultOf } from "../client/index.js";
import { useCairnClient } from "./CairnProvider.js";

/** A function that runs the action, the same one across renders. Actions are never re-sent: one in flight when the connection drops rejects with CONNECTION_LOST. */
export function useAction<Ref extends ActionReference>(ref: Ref): (...args: ArgsParameter<Ref>) => Promise<ResultOf<Ref>> {
  const client = useCairnClient();
  return useMemo(() => (...args: ArgsParameter<Ref>) => client.action(ref, ...args), [client, ref.path]);
}
