import { LAYOUT_REOPEN_RETRY_MS, systemClock } from "../base/index.js";
import type { NodeRole } from "../fleet/index.js";
import type { LayoutRetired } from "../replica/index.js";
import { startNode, type NodeOptions, type RunningNode } from "./startNode.js";
import { StoppedNodeServer } from "./StoppedNodeServer.js";

/**
 * `cairn serve`'s node: one started by startNode, re-opened on the new layout whenever a
 * reshard retires the one it serves (DESIGN.md §10), on the same port and node id.
 *
 * The retired node stops serving at once (startNode: calls refused, sessions ended,
 * health "stopped" with the reason) and keeps answering health while the new layout
 * opens (its shards catch up from the new snapshots); just before the new node listens,
 * the retired one is stopped. A writer comes back as a standby: the new layout's shards
 * have no writer, and it takes them if nobody else does, without refusing to start when
 * somebody does. If the new layout cannot be opened, health keeps saying "stopped" and
 * why (a StoppedNodeServer if the retired node is gone), and it is tried again every
 * LAYOUT_REOPEN_RETRY_MS.
 */
export async function startNodeAcrossReshards(options: NodeOptions): Promise<RunningNode> {
  const clock = options.clock ?? systemClock;
  const log = options.log;
  const ending = new AbortController();
  let current: RunningNode;
  /** Whatever listens on the port now, and how to free it. */
  let listening: (() => Promise<void>) | null = null;
  let reopening: Promise<void> | null = null;
  let lastRetired: LayoutRetired | null = null;
  let reopenError: string | null = null;
  /** The port of the first node (options.port may be 0: any free one); every later one takes it over. */
  let port = options.port;

  // A re-open takes the shard count the reshard chose: a --shards given at start named the old one.
  const { numShards: _startShards, ...reopenOptions } = options;
  /** The app served now: a reload replaces it, and a re-open on a new layout serves it. */
  let app = options.app;
  const open = async (port: number, role: NodeOptions["role"], first = false): Promise<RunningNode> => {
    const node = await startNode({
      ...(first ? options : reopenOptions),
      app,
      port,
      ...(role !== undefined ? { role } : {}),
      onLayoutRetired: (retired) => {
        lastRetired = retired;
        options.onLayoutRetired?.(retired);
        reopening ??= reopen(retired).finally(() => (reopening = null));
      },
      beforeListen: async () => {
        const free = listening;
        listening = null;
        await free?.();
      },
    });
    listening = () => node.stop();
    return node;
  };

  const reopen = async (retired: LayoutRetired): Promise<void> => {
    const role = (options.role ?? "writer") === "writer" ? "standby" : options.role;
    log(`${retired.reason}: re-opening this node on the new layout${options.role === undefined || options.role === "writer" ? " (as a standby: it takes the shards nobody writes)" : ""}`);
    while (!ending.signal.aborted) {
      try {
        current = await open(port, role);
        reopenError = null;
        log(`re-opened on the new layout: ${current.role()} at ${current.url}`);
        return;
      } catch (error) {
        reopenError = error instanceof Error ? error.message : String(error);
        log(`re-opening on the new layout failed (${reopenError}); health says "stopped"; trying again in ${LAYOUT_REOPEN_RETRY_MS / 1000} s`);
        if (listening === null && !ending.signal.aborted) {
          try {
            const stopped = await StoppedNodeServer.listen({ port, host: options.host }, () => ({ nodeId: options.nodeId, reason: stoppedReason() }));
            listening = () => stopped.close();
          } catch (listenError) {
            log(`cannot answer health on port ${port} meanwhile: ${(listenError as Error).message}`);
          }
        }
        try {
          await clock.sleep(LAYOUT_REOPEN_RETRY_MS, ending.signal);
        } catch {
          return;
        }
      }
    }
  };

  const stoppedReason = () => `${lastRetired?.reason ?? "the layout was retired"}${reopenError === null ? "" : `; re-opening on the new layout failed: ${reopenError}`}`;

  current = await open(options.port, options.role, true);
  port = current.port;
  const url = current.url;
  let stopped: Promise<void> | null = null;
  return {
    url,
    port,
    get deploymentId() {
      return current.deploymentId;
    },
    get handler() {
      return current.handler;
    },
    role: (): NodeRole => current.role(),
    layoutRetired: () => current.layoutRetired(),
    reloadApp: async (next) => {
      await current.reloadApp(next);
      app = next;
    },
    stop: () =>
      (stopped ??= (async () => {
        ending.abort();
        await reopening;
        const free = listening;
        listening = null;
        await free?.();
      })()),
  };
}
