import { CairnError, type Clock, type Random } from "../base/index.js";
import type { Globals } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { liveNodes } from "../fleet/index.js";

/**
 * `cairn reshard`'s check before it takes the lock: NODES_LIVE, naming them, while nodes
 * of the deployment are registered live (DESIGN.md §9 registry). A writer's live lease
 * refuses the reshard already; this catches the followers — replicas and standbys — that
 * serve the layout the reshard retires. They would stop serving it when they notice
 * (`cairn serve` re-opens on the new layout) but serve the old one until then, and a
 * standby would contend with the reshard for the old shards' leases.
 */
export async function refuseLiveNodes(store: ObjectStore, from: Globals, clock: Clock, random: Random, doing: "resharding" | "restoring in place" = "resharding"): Promise<void> {
  const live = await liveNodes(store, from.deploymentId, random, clock.nowMs());
  if (live.length === 0) return;
  const named = live.map((node) => `${node.nodeId} (${node.role}${node.url === null ? "" : ` at ${node.url}`})`).join(", ");
  throw new CairnError(
    "NODES_LIVE",
    `${live.length} node(s) of the deployment are registered live: ${named}; stop them before ${doing} ` +
      (doing === "resharding"
        ? `(or pass --allow-live-followers: they re-open on the new layout by themselves, serving the old one until they notice the switch, within a minute); `
        : "") +
      `nothing was changed`,
    { details: { nodes: live.map((node) => ({ nodeId: node.nodeId, role: node.role, url: node.url, expiresAt: node.expiresAt })) } },
  );
}
