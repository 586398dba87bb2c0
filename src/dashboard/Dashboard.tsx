import type { CairnClient } from "cairn/client";
import { useEffect, useMemo, useState } from "preact/hooks";
import { AdminApi, isRefusedKey } from "./adminApi.js";
import { openAdminClient, type LiveSession } from "./adminClient.js";
import type { Deployment } from "./adminTypes.js";
import { DataView } from "./DataView.js";
import { DeploymentView } from "./DeploymentView.js";
import { FunctionsView } from "./FunctionsView.js";
import { useHashRoute } from "./hashRoute.js";
import { LogsView } from "./LogsView.js";
import { NavBar } from "./NavBar.js";
import { TopBar } from "./TopBar.js";
import { usePolled } from "./usePolled.js";

interface DashboardProps {
  readonly adminKey: string;
  readonly onLogout: () => void;
  readonly onRefused: () => void;
}

/** How often the top bar re-reads the node's role and status. */
const NODE_REFRESH_MS = 10_000;

/** The logged-in page: the top bar, the left nav, and the view the URL's fragment names. */
export function Dashboard({ adminKey, onLogout, onRefused }: DashboardProps) {
  const api = useMemo(() => new AdminApi(adminKey), [adminKey]);
  const live = useLiveSession(adminKey, onRefused);
  const route = useHashRoute();
  const deployment = usePolled(() => api.get<Deployment>("deployment"), adminKey, NODE_REFRESH_MS);

  return (
    <div class="shell">
      <TopBar node={deployment.data?.node ?? null} nodeError={deployment.error} connection={live.connection} onLogout={onLogout} />
      <NavBar current={route.view} />
      <main class="content" data-testid={`view-${route.view}`}>
        {route.view === "data" && <DataView api={api} live={live} parts={route.parts} />}
        {route.view === "functions" && <FunctionsView api={api} live={live} selected={route.parts[0] ?? null} />}
        {route.view === "logs" && <LogsView api={api} live={live} />}
        {route.view === "deployment" && <DeploymentView api={api} />}
      </main>
    </div>
  );
}

/** One WebSocket for the page's life with this key, made an admin session; closed on log out. */
function useLiveSession(adminKey: string, onRefused: () => void): LiveSession {
  const [session, setSession] = useState<LiveSession>({ client: null, error: null, connection: "connecting" });
  useEffect(() => {
    let closed = false;
    const client: CairnClient = openAdminClient((error) => console.warn("cairn dashboard:", error));
    const stopWatching = client.onConnectionChange(({ state }) => !closed && setSession((previous) => ({ ...previous, connection: state })));
    client.setAdminKey(adminKey).then(
      () => !closed && setSession((previous) => ({ ...previous, client, error: null })),
      (error: unknown) => {
        if (closed) return;
        if (isRefusedKey(error) || (error as { code?: unknown } | null)?.code === "FORBIDDEN") onRefused();
        else setSession((previous) => ({ ...previous, error }));
      },
    );
    return () => {
      closed = true;
      stopWatching();
      void client.close();
    };
  }, [adminKey]);
  return session;
}
