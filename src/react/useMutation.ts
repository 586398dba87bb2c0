import { useMemo } from "react";
import type { MutationFunction, MutationReference } from "../client/index.js";
import { useCairnClient } from "./CairnProvider.js";

/**
 * A function that runs the mutation, the same one across renders:
 * `const send = useMutation(api.messages.send); await send({ body })`. Add an optimistic
 * update with `useMutation(ref).withOptimisticUpdate((store, args) => …)`: it edits the
 * client's query results at once and is undone when the mutation commits or fails.
 */
export function useMutation<Ref extends MutationReference>(ref: Ref): MutationFunction<Ref> {
  const client = useCairnClient();
  return useMemo(() => client.mutation(ref), [client, ref.path]);
}
