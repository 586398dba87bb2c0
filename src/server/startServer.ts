import { resolve } from "node:path";
import { DEFAULT_LOCAL_DIRECTORY, DEFAULT_STORE_URL, systemRandom } from "../base/index.js";
import { loadApp, type App } from "../functions/index.js";
import { assertConditionalWrites, openObjectStore, type ObjectStore } from "../objectstore/index.js";
import type { TokenVerifier } from "../sync/index.js";
import type { CorsOrigin } from "./CorsPolicy.js";
import { localNodeId } from "./localNodeId.js";
import { startNode, type NodeOptions, type RunningNode } from "./startNode.js";

export { DEFAULT_LOCAL_DIRECTORY, DEFAULT_STORE_URL };

/** What `startServer` needs: an app, and whatever differs from `cairn serve`'s defaults. */
export interface ServerOptions {
  /** The app: a module file (TypeScript compiled on load) or one already loaded. */
  readonly app: App | string;
  /** The bucket: a store URL (`s3://bucket/prefix?endpoint=…`, a directory path) or an open store; default `.cairn/bucket`. */
  readonly store?: ObjectStore | string;
  /** The local SQLite materialization's directory; default `.cairn/local`. */
  readonly localDirectory?: string;
  /** Default 0: any free port (read it from the result's `port`). */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Enables the admin API and internal functions for `Authorization: Admin <key>`; default none. */
  readonly adminKey?: string | null;
  /** Verifies client tokens (e.g. `jwtVerifier({ secret })`); default none: anonymous clients only. */
  readonly verifier?: TokenVerifier | null;
  /** A built page to serve at `/` (SPA fallback, compression, caching); default the status page. */
  readonly staticDir?: string | null;
  /** Origins of pages on other origins allowed to call the API; default same-origin only. */
  readonly corsOrigins?: readonly CorsOrigin[];
  /** The node's log lines; default stderr, prefixed `cairn: `. */
  readonly log?: (line: string) => void;
  /** Anything else a node takes (roles, tuning), as `startNode` does. */
  readonly node?: Partial<Omit<NodeOptions, "app" | "store" | "localDirectory">>;
}

/**
 * Starts a Cairn node inside this process with `cairn serve`'s defaults: the writer of
 * every shard of the deployment in `store`, serving `app` over HTTP and WebSocket. The
 * result's `stop()` drains, hands the leases over and closes what this call opened
 * (the store, if it was given as a URL). For a program that embeds Cairn (`cairn/server`).
 */
export async function startServer(options: ServerOptions): Promise<RunningNode> {
  const app = typeof options.app === "string" ? await loadApp(options.app) : options.app;
  const localDirectory = resolve(options.localDirectory ?? DEFAULT_LOCAL_DIRECTORY);
  const opened = typeof options.store === "object" ? null : await openObjectStore(options.store ?? DEFAULT_STORE_URL);
  const store = opened ?? (options.store as ObjectStore);
  try {
    if (opened !== null) await assertConditionalWrites(opened);
    const node = await startNode({
      nodeId: localNodeId(localDirectory, systemRandom),
      port: options.port ?? 0,
      host: options.host ?? "127.0.0.1",
      adminKey: options.adminKey ?? null,
      verifier: options.verifier ?? null,
      webApp: null,
      staticDir: options.staticDir ?? null,
      corsOrigins: options.corsOrigins ?? [],
      log: options.log ?? ((line) => process.stderr.write(`cairn: ${line}\n`)),
      ...options.node,
      app,
      store,
      localDirectory,
    });
    if (opened === null) return node;
    const stopNode = node.stop;
    let stopped: Promise<void> | null = null;
    return Object.assign(node, {
      stop: () =>
        (stopped ??= (async () => {
          await stopNode();
          await opened.close();
        })()),
    });
  } catch (error) {
    await opened?.close();
    throw error;
  }
}
