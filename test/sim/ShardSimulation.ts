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
 * `checkInvariants` must all hold.
 */
import { ManualClock } from "../../src/base/clock.js";
import { errorKindOf, hasErrorCode } from "../../src/base/errors.js";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { LogValidator, LOG_START } from "../../src/segments/LogValidator.js";
import { readLog } from "../../src/segments/logReader.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import type { WriteUnit } from "../../src/shard/WriteUnit.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { SkewedClock } from "../support/SkewedClock.js";

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
  readonly snapshots: number;
  readonly segmentsCollected: number;
  readonly skippedSegments: number;
  readonly violations: readonly string[];
}

const TABLE = 1;
const INITIAL_BALANCE = 100;
const TUNING: Partial<ShardEngineTuning> = {
  leaseTtlMs: 2_000,
  heartbeatIntervalMs: 500,
  clockSkewMsMax: 400,
  snapshotEverySegments: 6,
  snapshotEveryMs: 1_500,
  maintenanceIntervalMs: 300,
  gcIntervalMs: 800,
  gcSweepEveryRuns: 3,
  fetchConcurrency: 4,
  restoreLagSegments: 40,
};

type Outcome =
  | { readonly kind: "pending" }
  | { readonly kind: "acknowledged"; readonly ts: number }
  | { readonly kind: "not-committed"; readonly code: string }
  | { readonly kind: "unknown" };

interface Transfer {
  readonly from: DocumentId;
  readonly to: DocumentId;
  readonly amount: number;
}

interface SimNode {
  readonly name: string;
  readonly store: FaultyObjectStore;
  readonly local: LocalStore;
  readonly engine: ShardEngine;
  readonly random: SeededRandom;
  nextSeq: number;
  /** Errors that must never happen without real corruption (a Corruption kind, a rebuild). */
  readonly violations: string[];
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
  const accounts = Array.from({ length: accountCount }, () => newDocumentId(TABLE, random));
  const outcomes = new Map<string, Outcome>();
  const transfers = new Map<string, Transfer>();
  const counters = { snapshots: 0, segmentsCollected: 0, highestEpoch: 0 };

  const nodes: SimNode[] = [];
  const endMs = clock.nowMs() + durationMs;
  // Everything, set-up included, waits on the manual clock, so the driver runs it all.
  const simulation = (async () => {
    for (let index = 0; index < nodeCount; index++) {
      nodes.push(await openNode(index, { config, faults, random, clock, bucket, deploymentId, counters }));
    }
    await openAccounts(nodes[0]!, accounts, outcomes, clock);
    await Promise.all(nodes.map((node) => runNode(node, { clock, endMs, accounts, outcomes, transfers, faults })));
    for (const node of nodes) await node.engine.close();
  })();
  await driveUntilSettled(simulation, clock, endMs + SHUTDOWN_GRACE_MS);

  const report = await checkInvariants({ bucket, deploymentId, accounts, outcomes, transfers, clock });
  const followerViolations = await checkNodesFollow(nodes, { bucket, deploymentId, accounts, outcomes, transfers, clock });
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
  readonly counters: { snapshots: number; segmentsCollected: number; highestEpoch: number };
}

async function openNode(index: number, context: NodeContext): Promise<SimNode> {
  const { clock, counters } = context;
  const nodeRandom = new SeededRandom(context.config.seed * 1000 + index);
  const nodeClock = new SkewedClock(clock, randomInt(context.random, 600) - 300);
  const store = new FaultyObjectStore(context.bucket, nodeRandom, clock);
  store.inject({ effect: { delayMs: 5, jitterMs: 30 } });
  if (context.faults) {
    // Occasional slow requests widen the windows between a takeover's steps.
    store.inject({ rate: 0.05, effect: { delayMs: 50, jitterMs: 500 } });
    store.inject({ rate: 0.01, effect: "transient" });
    store.inject({ operations: ["create", "casPut"], rate: 0.02, effect: "lose-response" });
  }
  const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: context.deploymentId });
  const violations: string[] = [];
  const name = `node-${index}`;
  const open = () => ShardEngine.open({
    store,
    deploymentId: context.deploymentId,
    shard: 0,
    local,
    nodeId: `node-${index}`,
    clock: nodeClock,
    random: nodeRandom,
    hybridClock: new HybridClock(nodeClock),
    tuning: TUNING,
    onEvent: (event) => {
      if (event.type === "snapshot") counters.snapshots++;
      if (event.type === "gc") counters.segmentsCollected += event.report.segmentsDeleted;
      if (event.type === "acquired") counters.highestEpoch = Math.max(counters.highestEpoch, event.epoch);
      if (event.type === "local-rebuilt") violations.push(`${name}'s local copy diverged from the bucket: ${event.reason}`);
    },
  });
  // A node whose start-up hits bucket trouble starts again, as a supervisor would restart it.
  let engine: ShardEngine | null = null;
  for (let attempt = 1; engine === null; attempt++) {
    try {
      engine = await open();
    } catch (error) {
      if (attempt >= 20) throw error;
      await clock.sleep(100);
    }
  }
  return { name, store, local, engine, random: nodeRandom, nextSeq: 0, violations };
}

/** Virtual time after the run's end by which every actor must have stopped. */
const SHUTDOWN_GRACE_MS = 120_000;

/**
 * Runs all runnable work, then jumps virtual time to the next sleeper, until `work` ends.
 * Work that is still going long after `deadlineMs` of virtual time is a livelock (actors
 * waiting on something that never comes while drivers keep time moving): it fails fast.
 */
async function driveUntilSettled(work: Promise<void>, clock: ManualClock, deadlineMs: number): Promise<void> {
  let finished = false;
  let failure: unknown = null;
  work.then(
    () => (finished = true),
    (error: unknown) => {
      failure = error;
      finished = true;
    },
  );
  while (!finished) {
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    if (finished) break;
    if (clock.nowMs() > deadlineMs) throw new Error("simulation did not finish: some actor never returned (livelock)");
    if (!clock.advanceToNextSleeper()) throw new Error("simulation deadlocked: nothing runnable and nobody sleeping");
  }
  if (failure !== null) throw failure;
}

async function openAccounts(
  node: SimNode,
  accounts: readonly DocumentId[],
  outcomes: Map<string, Outcome>,
  clock: ManualClock,
) {
  for (let attempt = 0; ; attempt++) {
    try {
      await node.engine.acquire();
      const seq = node.nextSeq++;
      const key = `${node.name}:${seq}`;
      outcomes.set(key, { kind: "pending" });
      const result = await node.engine.commit({
        readTs: node.engine.readTs,
        documents: accounts.map((id) => ({ tableNumber: TABLE, id, value: balanceText(INITIAL_BALANCE), prevTs: null })),
        indexWrites: [],
        receipt: { clientId: node.name, seq, result: JSON.stringify({ open: true }), route: null },
      });
      outcomes.set(key, { kind: "acknowledged", ts: result.ts });
      return;
    } catch (error) {
      for (const [key, outcome] of outcomes) if (outcome.kind === "pending") outcomes.set(key, classifyFailure(error));
      if (attempt > 50) throw error;
      await clock.sleep(100);
    }
  }
}

interface RunContext {
  readonly clock: ManualClock;
  readonly endMs: number;
  readonly accounts: readonly DocumentId[];
  readonly outcomes: Map<string, Outcome>;
  readonly transfers: Map<string, Transfer>;
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
    if (context.faults && node.random.float() < 0.02) {
      // A stop-the-world pause longer than the lease: this node's bucket calls, including
      // the commits it is about to issue, stall and land late.
      node.store.pauseUntil(clock.nowMs() + 2_000 + randomInt(node.random, 6_000));
    }
    if (context.faults && node.random.float() < 0.02) {
      // A pause right after a create landed: the write is in the bucket, its verification
      // runs only after the lease lapsed, a successor took over, snapshotted and collected.
      node.store.inject({ operations: ["create"], once: true, effect: { pauseAfterMs: 2_000, jitterMs: 4_000 } });
    }
    const batch = 1 + randomInt(node.random, 6);
    await Promise.all(Array.from({ length: batch }, () => transfer(node, context)));
    await clock.sleep(randomInt(node.random, 100));
  }
}

async function transfer(node: SimNode, context: RunContext): Promise<void> {
  const { engine, local } = node;
  const readTs = engine.readTs;
  const fromIndex = randomInt(node.random, context.accounts.length);
  const toIndex = (fromIndex + 1 + randomInt(node.random, context.accounts.length - 1)) % context.accounts.length;
  const from = context.accounts[fromIndex]!;
  const to = context.accounts[toIndex]!;
  let fromDoc, toDoc;
  try {
    fromDoc = local.get(from, readTs);
    toDoc = local.get(to, readTs);
  } catch {
    return; // history below a restored snapshot: try again later
  }
  if (fromDoc === null || toDoc === null) return;
  const fromBalance = balanceOf(fromDoc.value);
  const amount = 1 + randomInt(node.random, 10);
  if (fromBalance < amount) return;
  const seq = node.nextSeq++;
  const key = `${node.name}:${seq}`;
  const unit: WriteUnit = {
    readTs,
    documents: [
      { tableNumber: TABLE, id: from, value: balanceText(fromBalance - amount), prevTs: fromDoc.ts },
      { tableNumber: TABLE, id: to, value: balanceText(balanceOf(toDoc.value) + amount), prevTs: toDoc.ts },
    ],
    indexWrites: [],
    receipt: { clientId: node.name, seq, result: JSON.stringify({ from, to, amount }), route: null },
    conflictsWith: (written) => written.kind === "document" && (written.id === from || written.id === to),
  };
  context.outcomes.set(key, { kind: "pending" });
  context.transfers.set(key, { from, to, amount });
  try {
    const result = await engine.commit(unit);
    context.outcomes.set(key, { kind: "acknowledged", ts: result.ts });
  } catch (error) {
    context.outcomes.set(key, classifyFailure(error));
    if (errorKindOf(error) === "Corruption") node.violations.push(`${node.name}: commit ${key}: ${String(error)}`);
  }
}

/** What a refusal says about a unit: poisoned (or a bug) means it may have committed. */
function classifyFailure(error: unknown): Outcome {
  if (hasErrorCode(error, "ENGINE_POISONED") || errorKindOf(error) === "Internal") return { kind: "unknown" };
  return { kind: "not-committed", code: (error as { code?: string }).code ?? "UNKNOWN" };
}

interface CheckContext {
  readonly bucket: MemoryObjectStore;
  readonly deploymentId: string;
  readonly accounts: readonly DocumentId[];
  readonly outcomes: ReadonlyMap<string, Outcome>;
  readonly transfers: ReadonlyMap<string, Transfer>;
  readonly clock: ManualClock;
}

/**
 * The simulation's verdict, read by a fresh node straight from the bucket:
 * - every acknowledged unit is present (its receipt, at its ts); none that was refused is;
 * - nothing a fenced epoch wrote past a newer fence is visible (skipped segments'
 *   receipts are absent) and no acknowledged unit sits in a skipped segment;
 * - the valid log chains and its timestamps strictly increase (the validator checks);
 * - balances equal the initial ones moved by exactly the committed transfers, and the
 *   bank total is conserved.
 */
async function checkInvariants(context: CheckContext) {
  const violations: string[] = [];
  const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: context.deploymentId });
  const reader = await ShardEngine.open({
    store: context.bucket,
    deploymentId: context.deploymentId,
    shard: 0,
    local,
    nodeId: "checker",
    clock: context.clock,
    random: new SeededRandom(0),
    hybridClock: new HybridClock(context.clock),
  });
  const readTs = reader.readTs;

  let unknownCommitted = 0;
  const counts = { acknowledged: 0, notCommitted: 0, unknown: 0 };
  const expected = new Map<string, number>(context.accounts.map((id) => [id, INITIAL_BALANCE]));
  for (const [key, outcome] of context.outcomes) {
    const [clientId, seqText] = key.split(":") as [string, string];
    const receipt = local.receipt(clientId, Number(seqText));
    switch (outcome.kind) {
      case "acknowledged":
        counts.acknowledged++;
        if (receipt === null) violations.push(`acknowledged ${key} is missing`);
        else if (receipt.ts !== outcome.ts) violations.push(`acknowledged ${key} at ts ${outcome.ts} found at ${receipt.ts}`);
        break;
      case "not-committed":
        counts.notCommitted++;
        if (receipt !== null) violations.push(`${key} was refused (${outcome.code}) but is visible`);
        break;
      case "unknown":
        counts.unknown++;
        if (receipt !== null) unknownCommitted++;
        break;
      case "pending":
        violations.push(`${key} never settled`);
        break;
    }
    const moved = context.transfers.get(key);
    if (receipt !== null && moved !== undefined) {
      expected.set(moved.from, expected.get(moved.from)! - moved.amount);
      expected.set(moved.to, expected.get(moved.to)! + moved.amount);
    }
  }

  let total = 0;
  for (const id of context.accounts) {
    const document = local.get(id, readTs);
    if (document === null) {
      violations.push(`account ${id} is missing`);
      continue;
    }
    const balance = balanceOf(document.value);
    total += balance;
    if (balance !== expected.get(id)) violations.push(`account ${id} holds ${balance}, expected ${expected.get(id)}`);
  }
  if (total !== INITIAL_BALANCE * context.accounts.length) violations.push(`bank total ${total} is not conserved`);

  const skippedSegments = await checkLog(context, local, violations);
  await reader.close();
  local.close();
  return { ...counts, unknownCommitted, skippedSegments, violations };
}

/**
 * Every node's local file, kept from the run (as a restarted process finds it), must warm
 * restart without a rebuild or an error and then agree with a fresh reader: same log
 * position, same balances, same receipts. A follower that once applied a segment it should
 * not have (a stray below logStart) fails here.
 */
async function checkNodesFollow(nodes: readonly SimNode[], context: CheckContext): Promise<string[]> {
  const violations: string[] = [];
  const freshLocal = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: context.deploymentId });
  const fresh = await openReader(context, freshLocal, "fresh", violations);
  for (const node of nodes) {
    const restarted = await openReader(context, node.local, node.name, violations);
    if (fresh === null || restarted === null) continue;
    if (JSON.stringify(restarted.position) !== JSON.stringify(fresh.position)) {
      violations.push(`${node.name} restarts at ${JSON.stringify(restarted.position)}, a fresh reader at ${JSON.stringify(fresh.position)}`);
    }
    for (const id of context.accounts) {
      const mine = node.local.get(id, restarted.readTs)?.value;
      const theirs = freshLocal.get(id, fresh.readTs)?.value;
      if (mine !== theirs) violations.push(`${node.name} holds account ${id} as ${mine}, a fresh reader as ${theirs}`);
    }
    for (const key of context.outcomes.keys()) {
      const [clientId, seqText] = key.split(":") as [string, string];
      const mine = node.local.receipt(clientId, Number(seqText));
      const theirs = freshLocal.receipt(clientId, Number(seqText));
      if ((mine === null) !== (theirs === null)) violations.push(`${node.name} and a fresh reader disagree on receipt ${key}`);
    }
    await restarted.close();
  }
  await fresh?.close();
  freshLocal.close();
  return violations;
}

async function openReader(context: CheckContext, local: LocalStore, name: string, violations: string[]): Promise<ShardEngine | null> {
  try {
    return await ShardEngine.open({
      store: context.bucket,
      deploymentId: context.deploymentId,
      shard: 0,
      local,
      nodeId: `check-${name}`,
      clock: context.clock,
      random: new SeededRandom(0),
      hybridClock: new HybridClock(context.clock),
      onEvent: (event) => {
        if (event.type === "local-rebuilt") violations.push(`${name}'s local copy had diverged from the bucket: ${event.reason}`);
      },
    });
  } catch (error) {
    violations.push(`${name} cannot restart on its local file: ${String(error)}`);
    return null;
  }
}

/** Walks the whole valid log; skipped segments' units must be invisible and unacknowledged. */
async function checkLog(context: CheckContext, local: LocalStore, violations: string[]): Promise<number> {
  const manifest = new ShardManifest(context.bucket, 0, context.deploymentId, new SeededRandom(0));
  const current = await manifest.load();
  const snapshot = current.snapshot;
  const validator = new LogValidator(
    0,
    snapshot === null
      ? LOG_START
      : { nextSeqno: snapshot.seqno + 1, highestEpoch: snapshot.epoch, lastHash: snapshot.hash, lastMaxTs: snapshot.ts },
  );
  if (snapshot === null && current.logStart > 0) violations.push(`logStart ${current.logStart} without a snapshot`);
  let skipped = 0;
  try {
    for await (const segment of readLog(context.bucket, {
      deploymentId: context.deploymentId,
      shard: 0,
      fromSeqno: validator.position.nextSeqno,
      concurrency: 8,
    })) {
      if (validator.accept(segment) === "apply") continue;
      skipped++;
      for (const receipt of segment.records.receipts) {
        const key = `${receipt.clientId}:${receipt.seq}`;
        if (context.outcomes.get(key)?.kind === "acknowledged") violations.push(`${key} was acknowledged from a skipped segment`);
        const visible = local.receipt(receipt.clientId, receipt.seq);
        if (visible !== null && visible.ts === receipt.ts) violations.push(`${key} from a fenced epoch is visible`);
      }
    }
  } catch (error) {
    violations.push(`log check failed: ${String(error)}`);
  }
  return skipped;
}

function balanceText(balance: number): string {
  return JSON.stringify({ balance });
}

function balanceOf(value: string): number {
  return (JSON.parse(value) as { balance: number }).balance;
}
