/**
 * The simulations' verdict on one shard, read by fresh nodes straight from the bucket
 * after the run (see checkShard and checkLocalCopies).
 */
import type { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { LogValidator, LOG_START, type LogPosition } from "../../src/segments/LogValidator.js";
import { readLog } from "../../src/segments/logReader.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import { balanceOf, INITIAL_BALANCE, type Bank } from "./bank.js";

export interface CheckContext {
  readonly bucket: ObjectStore;
  readonly deploymentId: string;
  readonly clock: ManualClock;
  readonly bank: Bank;
}

export interface ShardVerdict {
  readonly acknowledged: number;
  readonly notCommitted: number;
  readonly unknown: number;
  readonly unknownCommitted: number;
  readonly skippedSegments: number;
  /** Where the fresh reader's log ends. */
  readonly position: LogPosition;
  readonly violations: string[];
}

/**
 * - every acknowledged unit is present (its receipt, at its ts); none that was refused is;
 * - nothing a fenced epoch wrote past a newer fence is visible (skipped segments'
 *   receipts are absent) and no acknowledged unit sits in a skipped segment;
 * - the valid log chains and its timestamps strictly increase (the validator checks);
 * - a unit acknowledged before another was submitted precedes it in the log;
 * - balances equal the initial ones moved by exactly the committed transfers, and the
 *   bank total is conserved.
 */
export async function checkShard(context: CheckContext): Promise<ShardVerdict> {
  const { bank } = context;
  const violations: string[] = [];
  const local = LocalStore.open({ path: ":memory:", shard: bank.shard, deploymentId: context.deploymentId });
  const reader = await ShardEngine.open({
    store: context.bucket,
    deploymentId: context.deploymentId,
    shard: bank.shard,
    local,
    nodeId: "checker",
    clock: context.clock,
    random: new SeededRandom(0),
    hybridClock: new HybridClock(context.clock),
  });
  const readTs = reader.readTs;

  let unknownCommitted = 0;
  const committed: { readonly key: string; readonly ts: number }[] = [];
  const counts = { acknowledged: 0, notCommitted: 0, unknown: 0 };
  const expected = new Map<string, number>(bank.accounts.map((id) => [id, INITIAL_BALANCE]));
  for (const [key, outcome] of bank.outcomes) {
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
    if (receipt !== null) committed.push({ key, ts: receipt.ts });
    const moved = bank.transfers.get(key);
    if (receipt !== null && moved !== undefined) {
      expected.set(moved.from, expected.get(moved.from)! - moved.amount);
      expected.set(moved.to, expected.get(moved.to)! + moved.amount);
    }
  }

  let total = 0;
  for (const id of bank.accounts) {
    const document = local.get(id, readTs);
    if (document === null) {
      violations.push(`account ${id} is missing`);
      continue;
    }
    const balance = balanceOf(document.value);
    total += balance;
    if (balance !== expected.get(id)) violations.push(`account ${id} holds ${balance}, expected ${expected.get(id)}`);
  }
  if (total !== INITIAL_BALANCE * bank.accounts.length) violations.push(`bank total ${total} is not conserved`);

  checkRealTimeOrder(bank, committed, violations);
  const skippedSegments = await checkLog(context, local, violations);
  const position = reader.position;
  await reader.close();
  local.close();
  return { ...counts, unknownCommitted, skippedSegments, position, violations: violations.map((violation) => `shard ${bank.shard}: ${violation}`) };
}

/** Walks the committed units in log (ts) order: none may precede one acknowledged before it was submitted. */
function checkRealTimeOrder(bank: Bank, committed: { readonly key: string; readonly ts: number }[], violations: string[]): void {
  let latest: { readonly key: string; readonly submitted: number } | null = null;
  for (const { key } of committed.sort((a, b) => a.ts - b.ts)) {
    const acknowledged = bank.order.acknowledged.get(key);
    if (latest !== null && acknowledged !== undefined && latest.submitted > acknowledged) {
      violations.push(`${latest.key} precedes ${key} in the log but was submitted after ${key} was acknowledged`);
    }
    const submitted = bank.order.submitted.get(key)!;
    if (latest === null || submitted > latest.submitted) latest = { key, submitted };
  }
}

/**
 * Every node's local copy of the shard, kept from the run (as a restarted process finds
 * it), must warm restart without a rebuild or an error and then agree with a fresh
 * reader: same log position, same balances, same receipts. A follower that once applied
 * a segment it should not have (a stray below logStart) fails here.
 */
export async function checkLocalCopies(copies: readonly { readonly name: string; readonly local: LocalStore }[], context: CheckContext): Promise<string[]> {
  const { bank } = context;
  const violations: string[] = [];
  const freshLocal = LocalStore.open({ path: ":memory:", shard: bank.shard, deploymentId: context.deploymentId });
  const fresh = await openReader(context, freshLocal, "fresh", violations);
  for (const copy of copies) {
    const restarted = await openReader(context, copy.local, copy.name, violations);
    if (fresh === null || restarted === null) continue;
    if (JSON.stringify(restarted.position) !== JSON.stringify(fresh.position)) {
      violations.push(`${copy.name} restarts at ${JSON.stringify(restarted.position)}, a fresh reader at ${JSON.stringify(fresh.position)}`);
    }
    for (const id of bank.accounts) {
      const mine = copy.local.get(id, restarted.readTs)?.value;
      const theirs = freshLocal.get(id, fresh.readTs)?.value;
      if (mine !== theirs) violations.push(`${copy.name} holds account ${id} as ${mine}, a fresh reader as ${theirs}`);
    }
    for (const key of bank.outcomes.keys()) {
      const [clientId, seqText] = key.split(":") as [string, string];
      const mine = copy.local.receipt(clientId, Number(seqText));
      const theirs = freshLocal.receipt(clientId, Number(seqText));
      if ((mine === null) !== (theirs === null)) violations.push(`${copy.name} and a fresh reader disagree on receipt ${key}`);
    }
    await restarted.close();
  }
  await fresh?.close();
  freshLocal.close();
  return violations.map((violation) => `shard ${bank.shard}: ${violation}`);
}

async function openReader(context: CheckContext, local: LocalStore, name: string, violations: string[]): Promise<ShardEngine | null> {
  try {
    return await ShardEngine.open({
      store: context.bucket,
      deploymentId: context.deploymentId,
      shard: context.bank.shard,
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
  const { shard, outcomes } = context.bank;
  const manifest = new ShardManifest(context.bucket, shard, context.deploymentId, new SeededRandom(0));
  const current = await manifest.load();
  const snapshot = current.snapshot;
  const validator = new LogValidator(
    shard,
    snapshot === null
      ? LOG_START
      : { nextSeqno: snapshot.seqno + 1, highestEpoch: snapshot.epoch, lastHash: snapshot.hash, lastMaxTs: snapshot.ts },
  );
  if (snapshot === null && current.logStart > 0) violations.push(`logStart ${current.logStart} without a snapshot`);
  let skipped = 0;
  try {
    for await (const segment of readLog(context.bucket, {
      deploymentId: context.deploymentId,
      shard,
      fromSeqno: validator.position.nextSeqno,
      concurrency: 8,
    })) {
      if (validator.accept(segment) === "apply") continue;
      skipped++;
      for (const receipt of segment.records.receipts) {
        const key = `${receipt.clientId}:${receipt.seq}`;
        if (outcomes.get(key)?.kind === "acknowledged") violations.push(`${key} was acknowledged from a skipped segment`);
        const visible = local.receipt(receipt.clientId, receipt.seq);
        if (visible !== null && visible.ts === receipt.ts) violations.push(`${key} from a fenced epoch is visible`);
      }
    }
  } catch (error) {
    violations.push(`log check failed: ${String(error)}`);
  }
  return skipped;
}
