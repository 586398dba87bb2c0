import type { NodeSummary } from "./adminTypes.js";
import { messageOf } from "./adminApi.js";

interface TopBarProps {
  readonly node: NodeSummary | null;
  readonly nodeError: unknown;
  readonly connection: string;
  readonly onLogout: () => void;
}

/** Which node this is (id, role, status), whether the live session is up, and log out. */
export function TopBar({ node, nodeError, connection, onLogout }: TopBarProps) {
  return (
    <header class="topbar">
      <a class="brand" href="#/data">
        Cairn
      </a>
      <span class="node" data-testid="node-summary" title={node?.url ?? (nodeError ? messageOf(nodeError) : "")}>
        {node === null ? (
          <span class="muted">{nodeError ? "node: unknown" : "node: …"}</span>
        ) : (
          <>
            <code>{node.nodeId}</code>
            <span class={`badge role-${node.role}`} data-testid="node-role">
              {node.role}
            </span>
            <span class={`badge status-${node.status}`}>{node.status}</span>
          </>
        )}
      </span>
      <span class={`badge conn conn-${connection}`} data-testid="connection" title="the live WebSocket session">
        {connection === "connected" ? "live" : connection}
      </span>
      <button type="button" class="link" data-testid="logout" onClick={onLogout}>
        Log out
      </button>
    </header>
  );
}
