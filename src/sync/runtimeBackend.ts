import type { FunctionRuntime } from "../functions/index.js";
import type { LocalStore } from "../local/index.js";
import { decodeValueText } from "../model/ValueJson.js";
import type { SyncBackend } from "./SyncBackend.js";

/** The shard a writer serves functions from, as the backend needs it. */
export interface ServedShard {
  readonly readTs: number;
  readonly local: LocalStore;
}

/**
 * A writer's sync backend: functions run on its FunctionRuntime; receipts are read from
 * the shard's local store (the same records a re-sent mutation is answered from).
 * Client calls never reach internal functions.
 */
export function runtimeBackend(deploymentId: string, runtime: FunctionRuntime, shard: ServedShard): SyncBackend {
  return {
    deploymentId,
    get readTs() {
      return shard.readTs;
    },
    runQuery: (path, args, options) => runtime.runQueryRecorded(path, args, options),
    runMutation: (path, args, options) => runtime.runMutation(path, args, options),
    runAction: (path, args, options) => runtime.runAction(path, args, options),
    receipt: (clientId, seq) => {
      const receipt = shard.local.receipt(clientId, seq);
      return receipt === null ? null : { ts: receipt.ts, value: decodeValueText(receipt.result) };
    },
  };
}
