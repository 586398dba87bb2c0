/**
 * A Cairn node in a process of its own, started through `startNode` (the assembly
 * `cairn serve` uses) with options the command line does not offer: which shards a
 * writer owns, its lease-check cadence. Tests spawn it with `spawnServing` and one JSON
 * argument (NodeProcessConfig); it prints `serving at <url> ` like `cairn serve`, and
 * SIGTERM stops it gracefully ("stopped").
 */
import { loadApp } from "../../src/functions/index.js";
import { type GetOptions, type ObjectStore, openObjectStore } from "../../src/objectstore/index.js";
import { startNode, type NodeOptions } from "../../src/server/startNode.js";
import type { EngineEvent } from "../../src/shard/index.js";

export interface NodeProcessConfig {
  readonly store: string;
  readonly local: string;
  readonly nodeId: string;
  readonly app: string;
  readonly adminKey: string;
  readonly numShards?: number;
  readonly role?: NodeOptions["role"];
  readonly ownShards?: readonly number[];
  readonly leaseCheckIntervalMs?: number;
  readonly maxClockSkewMs?: number;
  readonly engineTuning?: NodeOptions["engineTuning"];
  readonly wakeHints?: boolean;
  readonly pollIntervalMs?: number;
  readonly fleet?: NodeOptions["fleet"];
  readonly frontierStallWarnMs?: number;
  /**
   * Engine events to print, one line each (`event <type> shard <n> …`; a catch-up's
   * replay step prints the seqno it applied): what a test cannot read off health.
   */
  readonly logEngineEvents?: readonly EngineEvent["type"][];
  /** Print every GET of a log segment (`get segment <shard> <seqno>`): which segments the node read. */
  readonly logSegmentGets?: boolean;
}

const config = JSON.parse(process.argv[2]!) as NodeProcessConfig;
const say = (line: string) => process.stdout.write(`node ${config.nodeId}: ${line}\n`);
const opened = await openObjectStore(config.store);
const store: ObjectStore =
  config.logSegmentGets === true
    ? new Proxy(opened, {
        get(target, property, receiver) {
          if (property !== "get") {
            const value: unknown = Reflect.get(target, property, receiver);
            return typeof value === "function" ? value.bind(target) : value;
          }
          return (key: string, options?: GetOptions) => {
            const segment = /^s(\d+)\/log\/(\d{20})$/.exec(key);
            if (segment !== null) say(`get segment ${Number(segment[1])} ${Number(segment[2])}`);
            return target.get(key, options);
          };
        },
      })
    : opened;
const loggedEvents = new Set(config.logEngineEvents ?? []);
const logEvent = (event: EngineEvent) => {
  if (!loggedEvents.has(event.type)) return;
  if (event.type === "progress") say(`event progress shard ${event.shard} ${event.progress.phase}${event.progress.phase === "replay" ? ` seqno ${event.progress.seqno}` : ""}`);
  else say(`event ${event.type} shard ${event.shard}`);
};
const node = await startNode({
  store,
  localDirectory: config.local,
  app: await loadApp(config.app),
  nodeId: config.nodeId,
  port: 0,
  host: "127.0.0.1",
  adminKey: config.adminKey,
  verifier: null,
  webApp: null,
  log: say,
  ...(loggedEvents.size > 0 ? { onEngineEvent: logEvent } : {}),
  ...(config.numShards !== undefined ? { numShards: config.numShards } : {}),
  ...(config.role !== undefined ? { role: config.role } : {}),
  ...(config.ownShards !== undefined ? { ownShards: config.ownShards } : {}),
  ...(config.leaseCheckIntervalMs !== undefined ? { leaseCheckIntervalMs: config.leaseCheckIntervalMs } : {}),
  ...(config.maxClockSkewMs !== undefined ? { maxClockSkewMs: config.maxClockSkewMs } : {}),
  ...(config.engineTuning !== undefined ? { engineTuning: config.engineTuning } : {}),
  ...(config.wakeHints !== undefined ? { wakeHints: config.wakeHints } : {}),
  ...(config.pollIntervalMs !== undefined ? { tailer: { idlePollMs: config.pollIntervalMs } } : {}),
  ...(config.fleet !== undefined ? { fleet: config.fleet } : {}),
  ...(config.frontierStallWarnMs !== undefined ? { frontierStallWarnMs: config.frontierStallWarnMs } : {}),
});
say(`serving at ${node.url} as ${node.role()}`);
process.once("SIGTERM", () => {
  void (async () => {
    await node.stop();
    await store.close();
    say("stopped");
    process.exit(0);
  })();
});
