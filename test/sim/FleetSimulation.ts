/**
 * A seeded, deterministic simulation of a fleet over one bucket: several shards, two
 * writer nodes that move the shards' ownership between them, and followers that tail
 * every shard with the real ShardTailer and read at their common frontier.
 *
 * - Writer node x starts owning every shard. On every beat each writer's Steering decides
 *   which shards to acquire and which to hand over, and does it. On odd seeds the script
 *   decides (ScriptedOwnership): the writer hands over with `relinquish` and acquires as
 *   LeaseWatcher does (once the lease lapsed by its clock, with the bounded skew, or was
 *   cleared). On even seeds the fleet node's own parts decide: FleetBalancer (the damped
 *   rendezvous planner) carried out by ShardRoles, over the live set the script keeps.
 * - The script acts at seeded moments: a graceful hand-over of one shard (script mode); a
 *   crash (the node's process stops dead: its bucket calls never return, its engines are
 *   abandoned without relinquish, its in-flight commits' outcomes become unknown; it
 *   restarts later as a new process on fresh local copies); or a pause past its lease (a
 *   zombie that resumes and must be fenced). The other node takes the shards over.
 * - Writers tail the shards they do not write, and send wake hints (created / verified /
 *   fence) to every other node, some lost with faults on. Idle shards tick (tickWhenIdle)
 *   so that the common frontier moves.
 * - Followers never write: a reader checks at every read that its frontier (min over
 *   shards of the applied frontier) never goes back and that each shard's bank total is
 *   whole at that frontier (transfers stay on one shard), and records what it showed.
 *   Now and then a follower's process stalls for seconds.
 * - At the end the faults stop, writers close, and every follower must converge to
 *   exactly the log; then shardChecks and fleetChecks judge the bucket and the whole log.
 *
 * Determinism: every actor waits only on one ManualClock, the bucket is in memory, and
 * every node has its own seeded Random, so the run is a pure function of the seed.
 */
import { ManualClock } from "../../src/base/clock.js";
import { errorKindOf } from "../../src/base/errors.js";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import { ShardTailer, type TailerTuning, type WakeHint } from "../../src/replica/ShardTailer.js";
import type { LogPosition } from "../../src/segments/LogValidator.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine, type EngineEvent } from "../../src/shard/ShardEngine.js";
import type { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { SkewedClock } from "../support/SkewedClock.js";
import { ArchivingMemoryStore } from "./ArchivingMemoryStore.js";
import { newBank, openAccounts, transfer, type Bank, type BankClient } from "./bank.js";
import { checkWholeLog, type Acquisition } from "./fleetChecks.js";
import { FrontierReader } from "./FrontierReader.js";
import { ScriptedOwnership } from "./ScriptedOwnership.js";
import { checkLocalCopies, checkShard } from "./shardChecks.js";
import { plannerSteering, scriptSteering, type Steering } from "./Steering.js";
import { driveUntilSettled, maybeStallWriter, nodeStore, openWithRestarts, SHUTDOWN_GRACE_MS, SIMULATION_TUNING } from "./simulationRuntime.js";

export interface FleetSimulationConfig {
  readonly seed: number;
  readonly shards?: number;
  readonly followers?: number;
  readonly accountsPerShard?: number;
  readonly durationMs?: number;
  /** Inject transient errors, lost responses, stalls, lost hints, crashes and pauses (latency and hand-overs are always on). */
  readonly faults?: boolean;
  /**
   * Who decides the moves: "script" moves shards at seeded moments (ScriptedOwnership);
   * "planner" runs each writer's real FleetBalancer (the damped rendezvous planner) and
   * ShardRoles, fed the live set the script's crashes and pauses change. Default: the
   * script on odd seeds, the planner on even ones.
   */
  readonly ownership?: "script" | "planner";
}

export interface FleetSimulationReport {
  readonly seed: number;
  readonly acknowledged: number;
  readonly notCommitted: number;
  readonly unknown: number;
  readonly unknownCommitted: number;
  readonly skippedSegments: number;
  readonly handOvers: number;
  readonly crashes: number;
  readonly pauses: number;
  /** Acquisitions of a shard by another node than its previous owner. */
  readonly takeovers: number;
  readonly followerReads: number;
  readonly followerRestores: number;
  /** Each shard's last segment hash: two runs of one seed end in the same logs. */
  readonly logEnds: readonly (string | null)[];
  readonly violations: readonly string[];
}

const WRITER_NODE_IDS = ["x", "y"] as const;
const FLEET_TUNING = { ...SIMULATION_TUNING, tickWhenIdle: true, frontierTickMs: 250 };
/** What LeaseWatcher is given: the engines' own bound on clock skew. */
const MAX_CLOCK_SKEW_MS = SIMULATION_TUNING.clockSkewMsMax!;
const TAILER_TUNING: Partial<TailerTuning> = { idlePollMs: 300, firstBackoffMs: 25, manifestRefreshMs: 2_000, watermarkIntervalMs: 1_000 };
/** How often a writer asks the ownership policy (plus up to 100 ms of jitter). */
const BEAT_MS = 300;
/** Virtual time after the writers closed within which every follower must reach the log's end. */
const QUIESCE_MS = 15_000;
/** Share of wake hints lost on the way with faults on (a hint is only ever an optimization). */
const HINT_LOSS_RATE = 0.1;

/** One process of a node: its view of the bucket and, per shard, an engine, its local copy and a tailer. */
interface NodeProcess extends BankClient {
  readonly nodeId: string;
  readonly store: FaultyObjectStore;
  readonly clock: SkewedClock;
  readonly engines: ShardEngine[];
  readonly tailers: ShardTailer[];
  alive: boolean;
  /** Whether its verified hints carry the segment's bytes (as the node's do for small segments), or announce then vouch by hash (large ones). */
  readonly hintsCarryBytes: boolean;
  /** A writer's ownership decisions, once it runs. */
  steering: Steering | null;
  /** Settles when the process is killed: its loops stop waiting for calls that never return. */
  readonly died: Promise<void>;
  readonly kill: () => void;
}

interface FollowerView {
  readonly process: NodeProcess;
  readonly reader: FrontierReader;
}

interface Fleet {
  readonly config: FleetSimulationConfig;
  readonly faults: boolean;
  readonly ownershipBy: "script" | "planner";
  readonly clock: ManualClock;
  readonly bucket: ArchivingMemoryStore;
  readonly deploymentId: string;
  readonly banks: readonly Bank[];
  readonly endMs: number;
  readonly ownership: ScriptedOwnership;
  readonly scriptRandom: SeededRandom;
  readonly hintRandom: SeededRandom;
  /** Each writer node's current process. */
  readonly writers: Map<string, NodeProcess>;
  readonly followers: FollowerView[];
  readonly processes: NodeProcess[];
  /** Actors started during the run (a restarted process's loops); the run waits for them all. */
  readonly running: Promise<void>[];
  readonly acquisitions: Acquisition[];
  readonly counters: { handOvers: number; crashes: number; pauses: number };
}

export async function runFleetSimulation(config: FleetSimulationConfig): Promise<FleetSimulationReport> {
  const shards = config.shards ?? 3;
  const random = new SeededRandom(config.seed);
  const clock = new ManualClock(1_700_000_000_000);
  const bucket = new ArchivingMemoryStore();
  const globals = await openGlobals(bucket, { clock, random, numShards: shards });
  const fleet: Fleet = {
    config,
    faults: config.faults ?? true,
    ownershipBy: config.ownership ?? (config.seed % 2 === 0 ? "planner" : "script"),
    clock,
    bucket,
    deploymentId: globals.value.deploymentId,
    banks: Array.from({ length: shards }, (_, shard) => newBank(shard, config.accountsPerShard ?? 4, random)),
    endMs: clock.nowMs() + (config.durationMs ?? 20_000),
    ownership: new ScriptedOwnership(WRITER_NODE_IDS, shards),
    scriptRandom: new SeededRandom(config.seed * 1000 + 900),
    hintRandom: new SeededRandom(config.seed * 1000 + 901),
    writers: new Map(),
    followers: [],
    processes: [],
    running: [],
    acquisitions: [],
    counters: { handOvers: 0, crashes: 0, pauses: 0 },
  };
  const skews = WRITER_NODE_IDS.map(() => randomInt(random, 600) - 300);
  let followerPositions: LogPosition[][] = [];
  const simulation = (async () => {
    for (const [index, nodeId] of WRITER_NODE_IDS.entries()) fleet.writers.set(nodeId, await openProcess(fleet, nodeId, 0, skews[index]!));
    for (let index = 0; index < (config.followers ?? 2); index++) {
      // A follower that publishes no watermark lets GC pass it while it stalls.
      const process = await openProcess(fleet, `f${index}`, 0, randomInt(random, 600) - 300, { publishWatermarks: random.float() < 0.5 });
      fleet.followers.push({ process, reader: new FrontierReader(process.name, process.engines, fleet.banks, process.violations) });
    }
    const first = fleet.writers.get(WRITER_NODE_IDS[0])!;
    for (const bank of fleet.banks) await openAccounts(first.engines[bank.shard]!, first, bank, clock);
    for (const writer of fleet.writers.values()) startWriter(fleet, writer);
    for (const follower of fleet.followers) fleet.running.push(readAsFollower(fleet, follower));
    fleet.running.push(runScript(fleet));
    await allOf(fleet.running);
    followerPositions = await quiesce(fleet);
  })();
  await driveUntilSettled(simulation, clock, fleet.endMs + SHUTDOWN_GRACE_MS);
  return judge(fleet, followerPositions);
}

/** Waits for every actor, also for those started while it waits. */
async function allOf(actors: readonly Promise<void>[]): Promise<void> {
  for (;;) {
    const count = actors.length;
    await Promise.all(actors);
    if (actors.length === count) return;
  }
}

// ---- processes -----------------------------------------------------------------------

async function openProcess(fleet: Fleet, nodeId: string, incarnation: number, skewMs: number, options: { publishWatermarks?: boolean } = {}): Promise<NodeProcess> {
  const { clock, config } = fleet;
  const processIndex = fleet.processes.length;
  const random = new SeededRandom(config.seed * 1000 + processIndex);
  const nodeClock = new SkewedClock(clock, skewMs);
  const store = nodeStore(fleet.bucket, random, clock, fleet.faults);
  const hybridClock = new HybridClock(nodeClock);
  let kill!: () => void;
  const died = new Promise<void>((resolve) => (kill = resolve));
  const process: NodeProcess = {
    nodeId,
    name: `${nodeId}.${incarnation}`,
    random,
    nextSeq: 0,
    violations: [],
    store,
    clock: nodeClock,
    engines: [],
    tailers: [],
    alive: true,
    hintsCarryBytes: (config.seed + processIndex) % 2 === 0,
    steering: null,
    died,
    kill: () => {
      process.alive = false;
      // Every bucket call from now on is held forever: the process is gone.
      store.inject({ effect: { until: new Promise<void>(() => undefined) } });
      kill();
    },
  };
  fleet.processes.push(process);
  for (const bank of fleet.banks) {
    const local = LocalStore.open({ path: ":memory:", shard: bank.shard, deploymentId: fleet.deploymentId });
    const engine = await openWithRestarts(
      () =>
        ShardEngine.open({
          store,
          deploymentId: fleet.deploymentId,
          shard: bank.shard,
          local,
          nodeId,
          clock: nodeClock,
          random,
          hybridClock,
          tuning: FLEET_TUNING,
          // Idle shards tick up to the newest commit this node made or applied on any shard.
          newestCommitTs: () => process.engines.reduce((newest, other) => Math.max(newest, other.lastDataTs), 0),
          onEvent: (event) => onEngineEvent(fleet, process, event),
        }),
      clock,
    );
    process.engines.push(engine);
    const tailer = new ShardTailer({ engine, consumerId: nodeId, clock: nodeClock, tuning: TAILER_TUNING, publishWatermarks: options.publishWatermarks ?? true });
    process.tailers.push(tailer);
    tailer.start();
  }
  return process;
}

function onEngineEvent(fleet: Fleet, process: NodeProcess, event: EngineEvent): void {
  process.steering?.engineEvent(event);
  switch (event.type) {
    case "acquired":
      fleet.acquisitions.push({ shard: event.shard, epoch: event.epoch, nodeId: process.nodeId, fenceSeqno: event.fenceSeqno });
      sendHint(fleet, process, { shard: event.shard, seqno: event.fenceSeqno, hash: event.fenceHash });
      // A writer keeps no watermark: its own GC would wait for it.
      process.tailers[event.shard]?.removeWatermark().catch(() => undefined);
      // Sometimes a new writer snapshots and collects at once, right behind its fence, so
      // that a zombie's late create can land in a collected slot that a stalled follower
      // has yet to read.
      if (fleet.faults && process.random.float() < 0.3) void collectBehindFence(process, process.engines[event.shard]!);
      return;
    case "relinquished":
      if (process.alive) fleet.counters.handOvers++;
      return;
    case "created":
      // Half the time segments are hinted as the node does it for a large one: announced,
      // then vouched by hash (the follower reads them); else the bytes travel with the vouch.
      if (!process.hintsCarryBytes) sendHint(fleet, process, { shard: event.shard, seqno: event.seqno, verifying: true });
      return;
    case "flushed":
      sendHint(fleet, process, { shard: event.shard, seqno: event.seqno, hash: event.hash, ...(process.hintsCarryBytes ? { segment: event.content } : {}) });
      return;
    case "local-rebuilt":
      process.violations.push(`${process.name}'s copy of shard ${event.shard} diverged from the bucket: ${event.reason}`);
      return;
    default:
      return;
  }
}

/** A writer's wake hint reaches every other live process a few ms later, or (with faults) is lost. */
function sendHint(fleet: Fleet, from: NodeProcess, hint: WakeHint): void {
  if (!from.alive) return;
  for (const to of [...fleet.writers.values(), ...fleet.followers.map((follower) => follower.process)]) {
    if (to === from || !to.alive) continue;
    if (fleet.faults && fleet.hintRandom.float() < HINT_LOSS_RATE) continue;
    fleet.clock.setTimer(1 + randomInt(fleet.hintRandom, 20), () => {
      if (to.alive) to.tailers[hint.shard]!.hinted(hint);
    });
  }
}

function untilDeath<T>(process: NodeProcess, work: Promise<T>): Promise<T | void> {
  return Promise.race([work, process.died]);
}

// ---- writers -------------------------------------------------------------------------

function startWriter(fleet: Fleet, writer: NodeProcess): void {
  const steered = { nodeId: writer.nodeId, engines: writer.engines, clock: writer.clock, maxClockSkewMs: MAX_CLOCK_SKEW_MS, onError: (error: unknown) => noteCorruption(writer, error) };
  const liveNodeIds = () => fleet.ownership.liveNodeIds;
  writer.steering =
    fleet.ownershipBy === "planner" ? plannerSteering(steered, fleet.deploymentId, liveNodeIds, BEAT_MS) : scriptSteering(steered, fleet.ownership.decide, liveNodeIds);
  fleet.running.push(beat(fleet, writer, writer.steering), commitTransfers(fleet, writer));
}

async function beat(fleet: Fleet, writer: NodeProcess, steering: Steering): Promise<void> {
  const { clock } = fleet;
  while (writer.alive && clock.nowMs() < fleet.endMs) {
    await untilDeath(writer, clock.sleep(BEAT_MS + randomInt(writer.random, 100)));
    if (writer.alive) await untilDeath(writer, steering.beat());
  }
}

/** A snapshot and a GC pass as soon as a writer took over (errors: the writer lost it again, or injected faults). */
async function collectBehindFence(writer: NodeProcess, engine: ShardEngine): Promise<void> {
  try {
    await engine.snapshotNow();
    await engine.collectGarbageNow();
  } catch (error) {
    noteCorruption(writer, error);
  }
}

/** Lease held, fenced during takeover, injected faults: tried again later. Corruption cannot happen: nothing in the bucket is corrupt. */
function noteCorruption(process: NodeProcess, error: unknown): void {
  if (errorKindOf(error) === "Corruption") process.violations.push(`${process.name}: ${String(error)}`);
}

/** Batches of transfers on the shards this process writes, each within one shard. */
async function commitTransfers(fleet: Fleet, writer: NodeProcess): Promise<void> {
  const { clock } = fleet;
  while (writer.alive && clock.nowMs() < fleet.endMs) {
    const writing = writer.engines.filter((engine) => engine.state.kind === "writing");
    if (writing.length === 0) {
      await untilDeath(writer, clock.sleep(100 + randomInt(writer.random, 200)));
      continue;
    }
    if (fleet.faults) maybeStallWriter(writer.store, writer.random, clock);
    const batch = Array.from({ length: 1 + randomInt(writer.random, 6) }, () => {
      const engine = writing[randomInt(writer.random, writing.length)]!;
      return transfer(engine, writer, fleet.banks[engine.shard]!);
    });
    await untilDeath(writer, Promise.all(batch));
    await untilDeath(writer, clock.sleep(randomInt(writer.random, 100)));
  }
}

// ---- the script of ownership moves ---------------------------------------------------

async function runScript(fleet: Fleet): Promise<void> {
  const { clock, ownership, scriptRandom: random } = fleet;
  while (clock.nowMs() < fleet.endMs - 3_000) {
    await clock.sleep(1_500 + randomInt(random, 2_500));
    const live = ownership.liveNodeIds;
    if (live.length < 2) continue;
    const roll = random.float();
    if (!fleet.faults || roll < 0.5) {
      // The planner moves shards only when the live set changes.
      if (fleet.ownershipBy === "script") {
        const shard = randomInt(random, fleet.banks.length);
        ownership.moveShard(shard, live.find((nodeId) => nodeId !== ownership.desiredOwner(shard))!);
      }
      continue;
    }
    const victim = live[randomInt(random, live.length)]!;
    ownership.declareGone(victim, live.find((nodeId) => nodeId !== victim)!);
    if (roll < 0.75) crashAndRestart(fleet, victim);
    else pause(fleet, victim);
  }
}

/** The process stops dead; after a while the node starts again as a new process on fresh local copies. */
function crashAndRestart(fleet: Fleet, nodeId: string): void {
  const { clock } = fleet;
  const crashed = fleet.writers.get(nodeId)!;
  crashed.kill();
  fleet.counters.crashes++;
  const downMs = 2_000 + randomInt(fleet.scriptRandom, 3_000);
  fleet.running.push(
    (async () => {
      await clock.sleep(downMs);
      if (clock.nowMs() >= fleet.endMs) return;
      const incarnation = Number(crashed.name.split(".")[1]) + 1;
      const restarted = await openProcess(fleet, nodeId, incarnation, crashed.clock.offsetMs);
      fleet.writers.set(nodeId, restarted);
      fleet.ownership.declareBack(nodeId);
      startWriter(fleet, restarted);
    })(),
  );
}

/** A stop-the-world pause past the lease: the node's bucket calls stall, then land late. */
function pause(fleet: Fleet, nodeId: string): void {
  const { clock } = fleet;
  const pausedMs = 2_500 + randomInt(fleet.scriptRandom, 5_500);
  fleet.writers.get(nodeId)!.store.pauseUntil(clock.nowMs() + pausedMs);
  fleet.counters.pauses++;
  fleet.running.push(clock.sleep(pausedMs).then(() => fleet.ownership.declareBack(nodeId)));
}

// ---- followers -----------------------------------------------------------------------

async function readAsFollower(fleet: Fleet, follower: FollowerView): Promise<void> {
  const { clock } = fleet;
  const { process } = follower;
  while (clock.nowMs() < fleet.endMs) {
    await clock.sleep(50 + randomInt(process.random, 250));
    // Now and then the follower's process stalls for seconds: when it reads the bucket
    // again, GC may have collected the log past its position.
    if (fleet.faults && process.random.float() < 0.02) process.store.pauseUntil(clock.nowMs() + 3_000 + randomInt(process.random, 3_000));
    follower.reader.read();
  }
}

// ---- the end -------------------------------------------------------------------------

/**
 * Faults off, writers closed: every follower must reach the log's end within QUIESCE_MS.
 * Returns each follower's position per shard, then stops them.
 */
async function quiesce(fleet: Fleet): Promise<LogPosition[][]> {
  const live = fleet.processes.filter((process) => process.alive);
  for (const process of live) process.store.clear();
  for (const writer of fleet.writers.values()) {
    if (!writer.alive) continue;
    await Promise.all(writer.tailers.map((tailer) => tailer.stop({ removeWatermark: true })));
    for (const engine of writer.engines) await engine.close();
  }
  for (const { process } of fleet.followers) for (const tailer of process.tailers) tailer.wake();
  await fleet.clock.sleep(QUIESCE_MS);
  const positions = fleet.followers.map(({ process }) => process.engines.map((engine) => engine.position));
  for (const { process } of fleet.followers) {
    await Promise.all(process.tailers.map((tailer) => tailer.stop()));
    for (const engine of process.engines) await engine.close();
  }
  return positions;
}

async function judge(fleet: Fleet, followerPositions: readonly LogPosition[][]): Promise<FleetSimulationReport> {
  const { clock, deploymentId, bucket } = fleet;
  const violations = fleet.processes.flatMap((process) => process.violations);
  // A crash made the outcome of what its process had in flight unknown.
  const crashed = new Set(fleet.processes.filter((process) => !process.alive).map((process) => process.name));
  for (const bank of fleet.banks) {
    for (const [key, outcome] of bank.outcomes) if (outcome.kind === "pending" && crashed.has(key.split(":")[0]!)) bank.outcomes.set(key, { kind: "unknown" });
  }
  const totals = { acknowledged: 0, notCommitted: 0, unknown: 0, unknownCommitted: 0, skippedSegments: 0 };
  const copies = fleet.processes.filter((process) => process.alive);
  const logEnds: (string | null)[] = [];
  for (const bank of fleet.banks) {
    const context = { bucket, deploymentId, clock, bank };
    const verdict = await checkShard(context);
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += verdict[key];
    violations.push(...verdict.violations);
    logEnds.push(verdict.position.lastHash);
    fleet.followers.forEach(({ process }, index) => {
      const position = followerPositions[index]?.[bank.shard];
      if (JSON.stringify(position) !== JSON.stringify(verdict.position)) {
        violations.push(`shard ${bank.shard}: ${process.name} stopped at ${JSON.stringify(position)}, the log ends at ${JSON.stringify(verdict.position)}`);
      }
    });
    violations.push(...(await checkLocalCopies(copies.map((process) => ({ name: process.name, local: process.engines[bank.shard]!.local })), context)));
    violations.push(
      ...(await checkWholeLog({
        archive: fleet.bucket.archive,
        deploymentId,
        bank,
        acquisitions: fleet.acquisitions.filter((acquisition) => acquisition.shard === bank.shard),
        nodeOfClient: (clientId) => clientId.split(".")[0]!,
        observations: fleet.followers.flatMap(({ reader }) => [...reader.observations.values()]),
        endPosition: verdict.position,
      })),
    );
  }
  // A crashed process's engines wait forever on calls that never return; nothing runs them again.
  for (const process of fleet.processes) for (const engine of process.engines) engine.local.close();
  let takeovers = 0;
  const lastAcquirer = new Map<number, string>();
  for (const { shard, nodeId } of fleet.acquisitions) {
    if (lastAcquirer.has(shard) && lastAcquirer.get(shard) !== nodeId) takeovers++;
    lastAcquirer.set(shard, nodeId);
  }
  const restores = fleet.followers.reduce((sum, { process }) => sum + process.tailers.reduce((count, tailer) => count + tailer.status().restores, 0), 0);
  const followerReads = fleet.followers.reduce((sum, { reader }) => sum + reader.reads, 0);
  return { seed: fleet.config.seed, ...totals, ...fleet.counters, takeovers, followerReads, followerRestores: restores, logEnds, violations };
}
