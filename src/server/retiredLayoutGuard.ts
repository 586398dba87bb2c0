import { CairnError } from "../base/index.js";
import type { LayoutRetired } from "../replica/index.js";
import type { SyncBackend } from "../sync/index.js";

/**
 * A backend that refuses every call once the node's layout is retired (a reshard switched
 * the deployment to another): the local copy is the old layout's, frozen at the switch,
 * and answering from it would show data the deployment has moved on from. The error
 * (DEPLOYMENT_RESHARDED) says why; the node re-opens on the new layout or stops.
 */
export function retiredLayoutGuard(retired: () => LayoutRetired | null, backend: SyncBackend): SyncBackend {
  const refuse = () => {
    const why = retired();
    if (why === null) return;
    throw new CairnError("DEPLOYMENT_RESHARDED", `${why.reason}; this node no longer serves it (retry: it re-opens on the new layout, or ask another node)`, {
      details: { openedGeneration: why.openedGeneration, currentGeneration: why.currentGeneration },
    });
  };
  return {
    deploymentId: backend.deploymentId,
    get readTs() {
      return backend.readTs;
    },
    runQuery: async (path, args, options) => {
      refuse();
      return backend.runQuery(path, args, options);
    },
    runMutation: async (path, args, options) => {
      refuse();
      return backend.runMutation(path, args, options);
    },
    runAction: async (path, args, options) => {
      refuse();
      return backend.runAction(path, args, options);
    },
    receipt: (clientId, seq, identity) => backend.receipt(clientId, seq, identity),
  };
}
