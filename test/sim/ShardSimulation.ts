/**
 * A seeded, deterministic simulation of one shard: several writers contend for the lease
 * while moving money between bank accounts, snapshots and GC run on their cadences, and
 * every node's bucket access goes through a store that injects latency, transient
 * errors, lost responses and stalls longer than a lease.
 *
 * Determinism: every actor waits only on one ManualClock and the bucket is in memory, so
 * the run is a pure function of the seed. The driver lets all runnable work settle, then
 * moves virtual time to the next sleeper.
 *
 * After the run a fresh node reads the shard from the bucket and the checks of
 * `checkShard` and `checkLocalCopies` must all hold.
 */
import { ManualClock } from "../../src/base/clock.js";
import { errorKindOf } from "../../src/base/errors.js";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { PIPELINE_DEPTH_MAX } from "../../src/shard/engineOptions.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { SkewedClock } from "../support/SkewedClock.js";
import { newBank, openAccounts, transfer, type Bank, type BankClient } from "./bank.js";
import { checkLocalCopies, checkShard } from "./shardChecks.js";
import {
  driveUntilSettled,
  maybeStallWriter,
  nodeStore,
  openWithRestarts,
  SHUTDOWN_GRACE_MS,
  SIMULATION_TUNING,
} from "./simulationRuntime.js";

export interface SimulationConfig {
  readonly seed: number;
  readonly nodes?: number;
  readonly accounts?: number;
  readonly durationMs?: number;
  /** Inject transient errors, lost responses and stalls (latency is always on). */
  readonly faults?: boolean;
}

export interface SimulationReport {
  readonly seed: number;
  readonly acknowledged: number;
  readonly notCommitted: number;
  readonly unknown: number;
  readonly unknownCommitted: number;
  readonly highestEpoch: number;
  /** Segments created while an earlier one of the same writer was still in flight. */
  readonly pipelined: number;
  readonly snapshots: number;
  readonly segmentsCollected: number;
  readonly skippedSegments: number;
  readonly violations: readonly string[];
}

interface SimNode extends BankClient {
  readonly store: FaultyObjectStore;
  readonly local: LocalStore;
  readonly engine: ShardEngine;
}

export async function runShardSimulation(config: SimulationConfig): Promise<SimulationReport> {
  const nodeCount = config.nodes ?? 3;
  const accountCount = config.accounts ?? 6;
  const durationMs = config.durationMs ?? 20_000;
  const faults = config.faults ?? true;
  const random = new SeededRandom(config.seed);
  const clock = new ManualClock(1_700_000_000_000);
  const bucket = new MemoryObjectStore();
  const globals = await openGlobals(bucket, { clock, random, numShards: 1 });
  const deploymentId = globals.value.deploymentId;
  const bank = newBank(0, accountCount, random);
  const counters = { snapshots: 0, segmentsCollected: 0, highestEpoch: 0, pipelined: 0 };

  const nodes: SimNode[] = [];
  const endMs = clock.nowMs() + durationMs;
  // Everything, set-up included, waits on the manual clock, so the driver runs it all.
  const simulation = (async () => {
    for (let index = 0; index < nodeCount; index++) {
      nodes.push(await openNode(index, { config, faults, random, clock, bucket, deploymentId, counters }));
    }
    await openAccounts(nodes[0]!.engine, nodes[0]!, bank, clock);
    await Promise.all(nodes.map((node) => runNode(node, { clock, endMs, bank, faults })));
    for (const node of nodes) await node.engine.close();
  })();
  await driveUntilSettled(simulation, clock, endMs + SHUTDOWN_GRACE_MS);

  const checkContext = { bucket, deploymentId, clock, bank };
  const report = await checkShard(checkContext);
  const followerViolations = await checkLocalCopies(nodes, checkContext);
  for (const node of nodes) node.local.close();
  const violations = [...report.violations, ...nodes.flatMap((node) => node.violations), ...followerViolations];
  return { seed: config.seed, ...counters, ...report, violations };
}

interface NodeContext {
  readonly config: SimulationConfig;
  readonly faults: boolean;
  readonly random: SeededRandom;
  readonly clock: ManualClock;
  readonly bucket: MemoryObjectStore;
  readonly deploymentId: string;
  readonly counters: { snapshots: number; segmentsCollected: number; highestEpoch: number; pipelined: number };
}

async function openNode(index: number, context: NodeContext): Promise<SimNode> {
  const { clock, counters } = context;
  const nodeRandom = new SeededRandom(context.config.seed * 1000 + index);
  const nodeClock = new SkewedClock(clock, randomInt(context.random, 600) - 300);
  const store = nodeStore(context.bucket, nodeRandom, clock, context.faults);
  const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: context.deploymentId });
  const violations: string[] = [];
  const name = `node-${index}`;
  // Writers of one bucket pipeline to different depths (1 is one flush at a time).
  const pipelineDepth = 1 + randomInt(context.random, PIPELINE_DEPTH_MAX);
  let engineRef: ShardEngine | null = null;
  // A node whose start-up hits bucket trouble starts again, as a supervisor would restart it.
  const engine = await openWithRestarts(
    () =>
      ShardEngine.open({
        store,
        deploymentId: context.deploymentId,
        shard: 0,
        local,
        nodeId: name,
        clock: nodeClock,
        random: nodeRandom,
        hybridClock: new HybridClock(nodeClock),
        tuning: { ...SIMULATION_TUNING, pipelineDepth },
        onEvent: (event) => {
          if (event.type === "created" && (engineRef?.segmentsInFlight ?? 0) > 1) counters.pipelined++;
          if (event.type === "snapshot") counters.snapshots++;
          if (event.type === "gc") counters.segmentsCollected += event.report.segmentsDeleted;
          if (event.type === "acquired") counters.highestEpoch = Math.max(counters.highestEpoch, event.epoch);
          if (event.type === "local-rebuilt") violations.push(`${name}'s local copy diverged from the bucket: ${event.reason}`);
        },
      }),
    clock,
  );
  engineRef = engine;
  return { name, store, local, engine, random: nodeRandom, nextSeq: 0, violations };
}

interface RunContext {
  readonly clock: ManualClock;
  readonly endMs: number;
  readonly bank: Bank;
  readonly faults: boolean;
}

async function runNode(node: SimNode, context: RunContext): Promise<void> {
  const { clock, endMs } = context;
  while (clock.nowMs() < endMs) {
    const state = node.engine.state.kind;
    if (state !== "writing") {
      try {
        if (node.random.float() < 0.5) {
          await node.engine.acquire();
          // Sometimes a new writer snapshots and collects at once, right behind its fence,
          // so that a zombie's late create can land in a collected slot just below the live log.
          if (context.faults && node.random.float() < 0.3) {
            await node.engine.snapshotNow();
            await node.engine.collectGarbageNow();
          }
        } else if (state !== "closed") await node.engine.catchUpToTail();
      } catch (error) {
        // Lease held, fenced during takeover, injected faults: try again later. Corruption
        // cannot happen here: nothing in the bucket is corrupt, so it is a protocol bug.
        if (errorKindOf(error) === "Corruption") node.violations.push(`${node.name}: ${String(error)}`);
      }
      // Now and then a follower stalls for seconds: when it reads again, its cached
      // manifest predates snapshots and GC that moved the log's start past its position.
      const stalled = context.faults && node.random.float() < 0.1;
      await clock.sleep(stalled ? 3_000 + randomInt(node.random, 3_000) : 100 + randomInt(node.random, 500));
      continue;
    }
    if (context.faults) maybeStallWriter(node.store, node.random, clock);
    // A batch's transfers start a few ms apart, so that some are sent while the segments of
    // earlier ones are in flight (pipelined), others together (one segment).
    const starts = Array.from({ length: 1 + randomInt(node.random, 6) }, () => randomInt(node.random, 40));
    await Promise.all(
      starts.map(async (delayMs) => {
        if (delayMs > 0) await clock.sleep(delayMs);
        return transfer(node.engine, node, context.bank);
      }),
    );
    await clock.sleep(randomInt(node.random, 100));
  }
}
