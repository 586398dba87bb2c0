import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import type { ConsumerWatermark } from "../../src/gc/ConsumerWatermarks.js";
import type { ObjectStore } from "../../src/objectstore/index.js";
import { TAILER_DEFAULTS } from "../../src/replica/ShardTailer.js";
import type { EndpointAddress } from "../kit/RemoteEndpoint.js";
import { ServeChild, type ServeHealth } from "../kit/ServeChild.js";
import { BenchSocket } from "../syncSupport/BenchSocket.js";
import { primeCounter, sequentialBumps } from "../syncSupport/sequentialBumps.js";
import { readWatermark } from "./bucketState.js";

/**
 * The writer refreshes its list of replicas on the registry's cadence (startNode's
 * REGISTRY_INTERVAL_MS_DEFAULT: 30 s, 10 s before), so a new replica gets hints within
 * that; this bound leaves 15 s of margin over the 30 s.
 */
export const HINT_TARGET_WAIT_MS_MAX = 45_000;
/** A replica publishes its watermark at most once per watermarkIntervalMs after applying; this long plus margin. */
export const WATERMARK_WAIT_MS_MAX = TAILER_DEFAULTS.watermarkIntervalMs + 10_000;
/** How long a replica may take to reach the writer's position when nothing else is asked of it. */
export const CATCH_UP_WAIT_MS_MAX = 120_000;

/** Output lines a node keeps for the benchmark to search (replay progress prints at most twice a second). */
const OUTPUT_LINES_MAX = 20_000;

export interface NodePairOptions {
  readonly name: string;
  readonly endpoint: EndpointAddress;
  /** Where both nodes' local directories go. */
  readonly directory: string;
  /** The deployment's key prefix, its own per pair. */
  readonly prefix: string;
  readonly appPath: string;
  readonly wakeHints: boolean;
  readonly pollIntervalMs: number;
}

/**
 * One deployment with two `cairn serve` children: its writer, and a replica of it (started
 * once the writer has created the deployment). Both get the same admin key; with
 * `wakeHints: false` both run with `--no-wake-hints`.
 */
export class NodePair {
  private constructor(
    readonly name: string,
    readonly writer: ServeChild,
    readonly replica: ServeChild,
    readonly wakeHints: boolean,
  ) {}

  /** Starts the writer, then the replica; a replica that fails to start stops the writer again. */
  static async start(options: NodePairOptions): Promise<NodePair> {
    const common = { endpoint: options.endpoint, prefix: options.prefix, appPath: options.appPath, outputLinesMax: OUTPUT_LINES_MAX };
    const hintsFlags = options.wakeHints ? [] : ["--no-wake-hints"];
    const writer = await ServeChild.start({ ...common, name: `${options.name} writer`, localDirectory: join(options.directory, `${options.name}-writer`), serveFlags: hintsFlags });
    try {
      const replica = await ServeChild.start({
        ...common,
        name: `${options.name} replica`,
        localDirectory: join(options.directory, `${options.name}-replica`),
        serveFlags: ["--replica", ...hintsFlags, "--poll-interval-ms", String(options.pollIntervalMs)],
      });
      return new NodePair(options.name, writer, replica, options.wakeHints);
    } catch (error) {
      await writer.stop();
      throw error;
    }
  }

  /**
   * With hints on: bumps a probe counter once a second until the writer's hint counter
   * grows, i.e. until its registry refresh has found the replica. Returns how long that took.
   */
  async awaitHintTarget(mutator: BenchSocket): Promise<number> {
    const startedMs = performance.now();
    const probe = await primeCounter(mutator, "probe");
    for (;;) {
      const before = (await this.writer.adminStatus()).hints?.sent ?? 0;
      await sequentialBumps(mutator, probe, 1);
      await sleep(250);
      const after = (await this.writer.adminStatus()).hints?.sent ?? 0;
      if (after > before) return performance.now() - startedMs;
      if (performance.now() - startedMs > HINT_TARGET_WAIT_MS_MAX) {
        throw new CairnError("TIMEOUT", `${this.name}: the writer sent no wake hint within ${HINT_TARGET_WAIT_MS_MAX} ms of the replica starting`);
      }
      await sleep(750);
    }
  }

  /** Resolves once the replica has applied the writer's last segment; returns that seqno. */
  async awaitReplicaCaughtUp(timeoutMs = CATCH_UP_WAIT_MS_MAX): Promise<number> {
    const target = (await shardHealth(this.writer)).appliedSeqno;
    const startedMs = performance.now();
    for (;;) {
      const shard = await shardHealth(this.replica);
      if (shard.appliedSeqno >= target) return target;
      if (performance.now() - startedMs > timeoutMs) {
        throw new CairnError("TIMEOUT", `${this.name}: the replica stayed at seqno ${shard.appliedSeqno}, the writer is at ${target} (last error: ${shard.lastError?.message ?? "none"})`);
      }
      await sleep(100);
    }
  }

  /**
   * Resolves once the replica's watermark in the bucket (`bucket` is the deployment's
   * prefix) shows its position: from then on the writer's GC keeps every segment after it,
   * and no deferred watermark PUT is pending.
   */
  async awaitReplicaWatermark(bucket: ObjectStore): Promise<ConsumerWatermark> {
    const { nodeId } = await this.replica.health();
    const startedMs = performance.now();
    for (;;) {
      const position = (await shardHealth(this.replica)).appliedSeqno;
      const watermark = await readWatermark(bucket, nodeId);
      if (watermark !== null && watermark.appliedSeqno >= position) return watermark;
      if (performance.now() - startedMs > WATERMARK_WAIT_MS_MAX) {
        throw new CairnError("TIMEOUT", `${this.name}: the replica's watermark shows ${watermark?.appliedSeqno ?? "nothing"} after ${WATERMARK_WAIT_MS_MAX} ms, its position is ${position}`);
      }
      await sleep(500);
    }
  }

  /** Stops the replica, then the writer; returns the exit codes that were not 0. */
  async stop(): Promise<string[]> {
    const problems: string[] = [];
    for (const node of [this.replica, this.writer]) {
      const code = await node.stop();
      if (code !== 0) problems.push(`${node.name} exited with ${code}`);
    }
    return problems;
  }
}

/** Shard 0's line of a node's health report (the benchmark's deployments have one shard). */
export async function shardHealth(node: ServeChild): Promise<ServeHealth["shards"][number]> {
  const shard = (await node.health()).shards[0];
  if (shard === undefined) throw new CairnError("INTERNAL", `${node.name} reports no shard`);
  return shard;
}
