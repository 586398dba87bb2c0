import type { FunctionRuntime } from "../functions/index.js";
import { decodeValueText } from "../model/index.js";
import type { SyncBackend } from "./SyncBackend.js";

/** What the backend needs of the node's shards: the ts every query reads them all at. */
export interface ServedShards {
  readonly readTs: number;
}

/**
 * A node's sync backend: functions run on its FunctionRuntime; receipts are read from
 * the shards' local stores (the same records a re-sent mutation is answered from).
 * Client calls never reach internal functions.
 */
export function runtimeBackend(deploymentId: string, runtime: FunctionRuntime, shards: ServedShards): SyncBackend {
  return {
    deploymentId,
    get readTs() {
      return shards.readTs;
    },
    runQuery: (path, args, options) => runtime.runQueryRecorded(path, args, options),
    runMutation: (path, args, options) => runtime.runMutation(path, args, options),
    runAction: (path, args, options) => runtime.runAction(path, args, options),
    receipt: (clientId, seq, identity) => {
      const receipt = runtime.receiptFor(clientId, seq, identity);
      return receipt.kind === "found" ? { ts: receipt.ts, value: decodeValueText(receipt.result) } : null;
    },
  };
}
