/**
 * The fleet chaos scenario the chaos tests share (test/server/fleetChaos.test.ts,
 * fleetFreeze.test.ts): three fleet nodes over six shards, twelve clients spread over
 * them sending bank transfers one after another (each client's own (clientId, seq)
 * stream; banks on every shard, so writes are forwarded too), one node disrupted midway
 * — SIGKILLed, or frozen (SIGSTOP) past its lease and thawed — and then a checker:
 * - every acknowledged transfer is in the bucket exactly once (one receipt in the
 *   segments a reader applies, one transfer row on every node still up), and none that
 *   was reported failed is there at all;
 * - each client's acknowledged transfers of one shard are in that shard's log in the order
 *   they were acknowledged (a client sends the next only after the previous one's answer);
 * - each epoch of each shard was written by one node (never two writers on one shard);
 * - every bank's total is what it opened with at every snapshot sampled during the run
 *   (every subscription update on every client, and a query on every node up every
 *   ~100 ms), and each account's balance is what the recorded transfers make it.
 * Times (disruption to the first acknowledged write on each of the victim's shards) are
 * printed, not asserted.
 */
import { join } from "node:path";
import { expect } from "vitest";
import { apiOf } from "../../src/client/index.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { CairnError } from "../../src/base/index.js";
import { assignment } from "../../src/fleet/index.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { functions } from "../functions/bankApp.js";
import { converged, FAST, fleetClient, type FleetNode, type FleetStore, health, query, readShardLogs, startFleetNode, within } from "./fleetHarness.js";
import { freezeHoldingNoLock } from "../support/freezeHoldingNoLock.js";

export interface BankChaosOptions {
  readonly store: FleetStore;
  /** Where the nodes' local directories go. */
  readonly localRoot: string;
  /** SIGKILL the victim; or SIGSTOP it until its shards are written by the others, then SIGCONT it. */
  readonly disruption: "SIGKILL" | "SIGSTOP";
}

const api = apiOf<typeof functions>();
const SHARDS = 6;
const ACCOUNTS = ["a", "b", "c", "d"];
const OPENING_BALANCE = 1_000;
const CLIENTS = 12;
/** Load before the disruption, and after the victim's shards are written again: enough to see writes land, short to keep the files fast. */
const LOAD_BEFORE_KILL_MS = 2_000;
const LOAD_AFTER_RECOVERY_MS = 1_000;

/**
 * The test's beat and leases, with idle shards ticking every 50 ms rather than 250: a
 * fleet node answers a mutation once its common frontier covers it, and a shard without
 * commits moves its frontier only by ticks (DESIGN.md §5) — more transfers per second.
 */
const TUNING = { ...FAST, engineTuning: { ...FAST.engineTuning, frontierTickMs: 50 } };

/** One bank per shard: the first name whose lane is the shard. */
const BANKS = Array.from({ length: SHARDS }, (_, shard) => Array.from({ length: 512 }, (_, i) => `bank-${i}`).find((bank) => laneOfValue(bank, SHARDS) === shard)!);
const shardOfBank = (bank: string) => laneOfValue(bank, SHARDS);

type Outcome =
  | { readonly kind: "acknowledged"; readonly order: number; readonly atMs: number }
  /** Rejected with an error that says it did not run. */
  | { readonly kind: "failed"; readonly code: string }
  /** Rejected with an unknown outcome (the client's re-sends ran out, or it was closed): present at most once. */
  | { readonly kind: "unknown"; readonly code: string };

interface Transfer {
  readonly tag: string;
  readonly client: number;
  readonly bank: string;
  outcome: Outcome | null;
}

/** Errors after which a mutation may or may not have run (the client library's view, plus a closed client). */
function outcomeUnknown(error: CairnError): boolean {
  if (error.code === "CONNECTION_LOST" || error.code === "ENGINE_POISONED") return true;
  if (error.code === "WRITER_UNAVAILABLE") return error.details?.["outcomeUnknown"] === true;
  if (error.code === "REPLICA_BEHIND") return error.details?.["committed"] === true;
  return false;
}

/** Per bank, its total and number of accounts, from balances keyed `bank/name` (as bank:totals answers). */
function totalsOf(balances: Record<string, number>): Record<string, { total: number; accounts: number }> {
  const totals: Record<string, { total: number; accounts: number }> = {};
  for (const [key, balance] of Object.entries(balances)) {
    const entry = (totals[key.split("/")[0]!] ??= { total: 0, accounts: 0 });
    entry.total += balance;
    entry.accounts++;
  }
  return totals;
}

const TAG = /"(tx\.\d+\.\d+)"/;

export async function runBankChaos(options: BankChaosOptions): Promise<void> {
  const { store, localRoot, disruption } = options;
  console.log(`fleet chaos over ${store.name}: ${disruption}`);
  const spec = (nodeId: string) => ({ nodeId, store, local: join(localRoot, `local-${nodeId}`), app: "test/functions/bankApp.ts", numShards: SHARDS, extra: TUNING });
  // One first (it creates the deployment), then the others at once.
  const first = await startFleetNode(spec("alpha"));
  const nodes: FleetNode[] = [first, ...(await Promise.all(["beta", "gamma"].map((nodeId) => startFleetNode(spec(nodeId)))))];
  const target3 = assignment(SHARDS, nodes.map((node) => node.nodeId));
  await within("three nodes converge to the rendezvous assignment", () => converged(nodes, target3));
  // The victim: the node with the most shards (rendezvous may give one node none).
  const victim = nodes.reduce((most, node) => (target3.filter((owner) => owner === node.nodeId).length > target3.filter((owner) => owner === most.nodeId).length ? node : most));
  const survivors = nodes.filter((node) => node !== victim);
  const victimShards = target3.flatMap((owner, shard) => (owner === victim.nodeId ? [shard] : []));
  console.log(`fleet chaos: assignment ${JSON.stringify(target3)}; ${victim.nodeId} (shards ${victimShards.join(", ")}) will get ${disruption}`);

  const clients: CairnClient[] = Array.from({ length: CLIENTS }, (_, index) => fleetClient(nodes, index % nodes.length));
  await Promise.all(BANKS.map((bank, index) => clients[index % CLIENTS]!.mutation(api.bank.open, { bank, names: ACCOUNTS, balance: OPENING_BALANCE })));

  // Every snapshot seen anywhere must keep every bank's total.
  const violations: string[] = [];
  const expectedTotals = Object.fromEntries(BANKS.map((bank) => [bank, { total: OPENING_BALANCE * ACCOUNTS.length, accounts: ACCOUNTS.length }]));
  const checkTotals = (where: string, totals: Record<string, { total: number; accounts: number }>) => {
    // A bank not yet visible (its opening not applied on this node yet) is absent, never partial.
    for (const [bank, seen] of Object.entries(totals)) {
      if (JSON.stringify(seen) !== JSON.stringify(expectedTotals[bank])) violations.push(`${where}: bank ${bank} shows ${JSON.stringify(seen)}`);
    }
  };
  let subscriptionUpdates = 0;
  // Balances change with every transfer (totals would not: no update to judge).
  clients.forEach((client, index) =>
    client.subscribe(api.bank.balances, {}, (balances) => {
      subscriptionUpdates++;
      checkTotals(`client ${index}'s subscription`, totalsOf(balances));
    }),
  );
  let frozen: FleetNode | null = null;
  let sampling = true;
  let samples = 0;
  const sampler = (async () => {
    while (sampling) {
      await Promise.all(
        nodes
          .filter((node) => node.child.exitCode === null && node.child.signalCode === null && node !== frozen)
          .map(async (node) => {
            try {
              checkTotals(`a query on ${node.nodeId}`, await query(node, "bank:totals"));
              samples++;
            } catch {
              // The node was killed or frozen under the query: nothing to judge.
            }
          }),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  // The load: each client one transfer after another, on banks of every shard.
  const transfers: Transfer[] = [];
  let acknowledged = 0;
  let loading = true;
  const firstAckAfterKill = new Map<number, number>();
  let killedMs: number | null = null;
  const load = clients.map(async (client, index) => {
    for (let k = 0; loading; k++) {
      const bank = BANKS[Math.floor(Math.random() * BANKS.length)]!;
      const from = Math.floor(Math.random() * ACCOUNTS.length);
      const to = (from + 1 + Math.floor(Math.random() * (ACCOUNTS.length - 1))) % ACCOUNTS.length;
      const transfer: Transfer = { tag: `tx.${index}.${k}`, client: index, bank, outcome: null };
      transfers.push(transfer);
      const sentMs = Date.now();
      const slow = setInterval(() => console.log(`fleet chaos: ${transfer.tag} (bank ${bank}, shard ${shardOfBank(bank)}, client ${JSON.stringify(client.connectionState)}) unanswered for ${Date.now() - sentMs} ms`), 5_000);
      try {
        const tag = await client.mutation(api.bank.transfer, { bank, from: ACCOUNTS[from]!, to: ACCOUNTS[to]!, amount: 1 + Math.floor(Math.random() * 50), tag: transfer.tag });
        if (tag !== transfer.tag) violations.push(`${transfer.tag} answered ${JSON.stringify(tag)}`);
        transfer.outcome = { kind: "acknowledged", order: acknowledged++, atMs: Date.now() };
        const shard = shardOfBank(bank);
        if (killedMs !== null && sentMs >= killedMs && victimShards.includes(shard) && !firstAckAfterKill.has(shard)) firstAckAfterKill.set(shard, Date.now() - killedMs);
      } catch (error) {
        const code = (error as CairnError).code ?? "INTERNAL";
        transfer.outcome = outcomeUnknown(error as CairnError) ? { kind: "unknown", code } : { kind: "failed", code };
        // A client that fails at once (closed after a failed assertion) must not spin in
        // microtasks: that starves the timers and child-exit events, and the run hangs.
        await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        clearInterval(slow);
      }
    }
  });

  await new Promise((resolve) => setTimeout(resolve, LOAD_BEFORE_KILL_MS));
  const beforeKill = acknowledged;
  killedMs = Date.now();
  if (disruption === "SIGKILL") {
    await victim.kill();
  } else {
    frozen = victim;
    await freezeHoldingNoLock(victim.child, /^[a-z][a-z0-9+.-]*:\/\//i.test(options.store.url) ? null : options.store.url);
  }
  console.log(`fleet chaos: ${victim.nodeId} got ${disruption} after ${beforeKill} acknowledged transfers`);
  const target2 = assignment(SHARDS, survivors.map((node) => node.nodeId));
  await within("the survivors write the victim's shards", () => converged(survivors, target2), killedMs);
  await within("a transfer sent after the disruption is acknowledged on each of the victim's shards", () => victimShards.every((shard) => firstAckAfterKill.has(shard)), killedMs);
  for (const shard of victimShards) console.log(`fleet chaos: shard ${shard}: first acknowledged write ${firstAckAfterKill.get(shard)} ms after the ${disruption} (lease TTL ${FAST.engineTuning.leaseTtlMs} ms)`);
  if (disruption === "SIGSTOP") {
    const thawedMs = Date.now();
    victim.child.kill("SIGCONT");
    frozen = null;
    await within("the thawed node writes its shards again", () => converged(nodes, target3), thawedMs);
  }
  await new Promise((resolve) => setTimeout(resolve, LOAD_AFTER_RECOVERY_MS));
  loading = false;
  await Promise.all(load);
  sampling = false;
  await sampler;

  const outcomes = { acknowledged: 0, failed: 0, unknown: 0 };
  for (const transfer of transfers) outcomes[transfer.outcome!.kind]++;
  const failedCodes = [...new Set(transfers.flatMap((transfer) => (transfer.outcome!.kind === "acknowledged" ? [] : [transfer.outcome!.code])))];
  console.log(`fleet chaos: ${transfers.length} transfers sent: ${JSON.stringify(outcomes)} (codes ${failedCodes.join(", ") || "none"}); ${samples} query samples, ${subscriptionUpdates} subscription updates`);
  expect(outcomes.acknowledged).toBeGreaterThan(beforeKill);

  // Every node up serves every acknowledged transfer, each once, and none reported failed.
  const serving = disruption === "SIGKILL" ? survivors : nodes;
  const ackedTags = new Set(transfers.filter((transfer) => transfer.outcome!.kind === "acknowledged").map((transfer) => transfer.tag));
  const failedTags = new Set(transfers.filter((transfer) => transfer.outcome!.kind === "failed").map((transfer) => transfer.tag));
  type Row = { bank: string; tag: string; from: string; to: string; amount: number };
  let rowsBySurvivor: Row[][] = [];
  await within("every acknowledged transfer is on every node up", async () => {
    rowsBySurvivor = await Promise.all(serving.map((node) => query<Row[]>(node, "bank:transfers")));
    return rowsBySurvivor.every((rows) => [...ackedTags].every((tag) => rows.some((row) => row.tag === tag)));
  });
  for (const [index, rows] of rowsBySurvivor.entries()) {
    const tags = rows.map((row) => row.tag);
    expect(tags.length, `${serving[index]!.nodeId}: a transfer row twice`).toBe(new Set(tags).size);
    expect(tags.filter((tag) => failedTags.has(tag)), `${serving[index]!.nodeId}: transfers reported failed`).toEqual([]);
    // Each account's balance is what the recorded transfers make it; each bank's total is kept.
    const expected: Record<string, number> = Object.fromEntries(BANKS.flatMap((bank) => ACCOUNTS.map((name) => [`${bank}/${name}`, OPENING_BALANCE])));
    for (const row of rows) {
      expected[`${row.bank}/${row.from}`]! -= row.amount;
      expected[`${row.bank}/${row.to}`]! += row.amount;
    }
    expect(await query(serving[index]!, "bank:balances")).toEqual(expected);
    checkTotals(`the final query on ${serving[index]!.nodeId}`, await query(serving[index]!, "bank:totals"));
  }
  expect(violations).toEqual([]);

  // The bucket: each shard's log, as a reader applies it.
  const deploymentId = (await health(serving[0]!)).deploymentId;
  const logs = await readShardLogs(await store.open(), deploymentId, SHARDS);
  const receiptsByTag = new Map<string, { shard: number; index: number; seqno: number; epoch: number }[]>();
  for (const log of logs) {
    log.applied.forEach((receipt, index) => {
      const tag = TAG.exec(receipt.result)?.[1];
      if (tag === undefined) return;
      receiptsByTag.set(tag, [...(receiptsByTag.get(tag) ?? []), { shard: log.shard, index, seqno: receipt.seqno, epoch: receipt.epoch }]);
    });
    console.log(`fleet chaos: shard ${log.shard}: ${log.segments} segments, ${log.applied.length} receipts applied, ${log.skipped.length} in skipped segments; writers by epoch ${JSON.stringify([...log.writersByEpoch])}`);
  }
  const twice = [...receiptsByTag].filter(([, receipts]) => receipts.length > 1).map(([tag]) => tag);
  expect(twice, "transfers applied twice").toEqual([]);
  expect([...ackedTags].filter((tag) => !receiptsByTag.has(tag)), "acknowledged transfers missing from the log").toEqual([]);
  expect([...failedTags].filter((tag) => receiptsByTag.has(tag)), "transfers reported failed but in the log").toEqual([]);
  for (const transfer of transfers) {
    const receipts = receiptsByTag.get(transfer.tag);
    if (receipts !== undefined) expect(receipts[0]!.shard, `${transfer.tag} on its bank's shard`).toBe(shardOfBank(transfer.bank));
  }
  // Per client and shard: log order is acknowledgement order.
  for (let client = 0; client < CLIENTS; client++) {
    for (let shard = 0; shard < SHARDS; shard++) {
      const acked = transfers.filter((transfer) => transfer.client === client && transfer.outcome!.kind === "acknowledged" && shardOfBank(transfer.bank) === shard);
      const positions = acked.map((transfer) => receiptsByTag.get(transfer.tag)![0]!.index);
      expect(positions, `client ${client}, shard ${shard}: log order`).toEqual([...positions].sort((a, b) => a - b));
    }
  }
  // The victim's shards went on in a new epoch written by a survivor (and, thawed, in a later one by the victim again).
  const survivorIds = survivors.map((node) => node.nodeId);
  for (const shard of victimShards) {
    const writers = logs[shard]!.epochs.map((epoch) => logs[shard]!.writersByEpoch.get(epoch)!);
    const tookOver = writers.findIndex((writer, index) => survivorIds.includes(writer) && writers.slice(0, index).includes(victim.nodeId));
    expect(tookOver, `shard ${shard}: a survivor wrote it after the victim (writers by epoch: ${writers.join(", ")})`).toBeGreaterThan(0);
    expect(writers.at(-1), `shard ${shard}'s last writer`).toBe(disruption === "SIGKILL" ? writers[tookOver] : victim.nodeId);
    if (disruption === "SIGKILL") expect(survivorIds).toContain(writers.at(-1));
  }
}


