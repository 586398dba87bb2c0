import { useCallback, useSyncExternalStore } from "react";
import type { ConnectionState } from "../client/index.js";
import { useCairnClient } from "./CairnProvider.js";

/** The client's connection, live: `state` is "connecting", "connected", "waitingToReconnect" or "closed" (e.g. to show "reconnecting…"). */
export function useConnectionState(): ConnectionState {
  const client = useCairnClient();
  const subscribe = useCallback(
    (onChange: () => void) => {
      const stop = client.onConnectionChange(() => onChange());
      return () => void stop();
    },
    [client],
  );
  const getSnapshot = useCallback(() => client.connectionState, [client]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}
