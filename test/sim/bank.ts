/**
 * The simulations' workload: a bank of accounts on one shard, opened in one unit and then
 * moved between by transfers of one unit each, with the outcome of every unit recorded
 * as its committer heard it. The checks compare those outcomes with what the bucket holds.
 */
import { errorKindOf, hasErrorCode } from "../../src/base/errors.js";
import { randomInt, type SeededRandom } from "../../src/base/random.js";
import type { ManualClock } from "../../src/base/clock.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import type { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { WriteUnit } from "../../src/shard/WriteUnit.js";

export const TABLE = 1;
export const INITIAL_BALANCE = 100;

export type Outcome =
  | { readonly kind: "pending" }
  | { readonly kind: "acknowledged"; readonly ts: number }
  | { readonly kind: "not-committed"; readonly code: string }
  | { readonly kind: "unknown" };

export interface Transfer {
  readonly from: DocumentId;
  readonly to: DocumentId;
  readonly amount: number;
}

/** One shard's accounts and every unit written to them, keyed `clientId:seq` (their receipt). */
export interface Bank {
  readonly shard: number;
  readonly accounts: readonly DocumentId[];
  readonly outcomes: Map<string, Outcome>;
  readonly transfers: Map<string, Transfer>;
  /**
   * When each unit was submitted and acknowledged, as steps of one counter: a unit
   * acknowledged before another was submitted must precede it in the log.
   */
  readonly order: { step: number; readonly submitted: Map<string, number>; readonly acknowledged: Map<string, number> };
}

/** Who commits: its receipts' client id, its own random and sequence, where it reports protocol errors. */
export interface BankClient {
  readonly name: string;
  readonly random: SeededRandom;
  nextSeq: number;
  /** Errors that must never happen without real corruption (a Corruption kind, a rebuild). */
  readonly violations: string[];
}

export function newBank(shard: number, accountCount: number, random: SeededRandom): Bank {
  const accounts = Array.from({ length: accountCount }, () => newDocumentId(TABLE, random));
  return { shard, accounts, outcomes: new Map(), transfers: new Map(), order: { step: 0, submitted: new Map(), acknowledged: new Map() } };
}

/** Acquires the shard and opens every account in one unit, retrying through injected faults. */
export async function openAccounts(engine: ShardEngine, client: BankClient, bank: Bank, clock: ManualClock): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await engine.acquire();
      const seq = client.nextSeq++;
      const key = `${client.name}:${seq}`;
      submitted(bank, key);
      const result = await engine.commit({
        readTs: engine.readTs,
        documents: bank.accounts.map((id) => ({ tableNumber: TABLE, id, value: balanceText(INITIAL_BALANCE), prevTs: null })),
        indexWrites: [],
        receipt: { clientId: client.name, seq, result: JSON.stringify({ open: true }), route: null },
      });
      acknowledged(bank, key, result.ts);
      return;
    } catch (error) {
      for (const [key, outcome] of bank.outcomes) if (outcome.kind === "pending") bank.outcomes.set(key, classifyFailure(error));
      if (attempt > 50) throw error;
      await clock.sleep(100);
    }
  }
}

/** One transfer between two random accounts at the engine's frontier, recorded with its outcome. */
export async function transfer(engine: ShardEngine, client: BankClient, bank: Bank): Promise<void> {
  const readTs = engine.readTs;
  const fromIndex = randomInt(client.random, bank.accounts.length);
  const toIndex = (fromIndex + 1 + randomInt(client.random, bank.accounts.length - 1)) % bank.accounts.length;
  const from = bank.accounts[fromIndex]!;
  const to = bank.accounts[toIndex]!;
  let fromDoc, toDoc;
  try {
    fromDoc = engine.local.get(from, readTs);
    toDoc = engine.local.get(to, readTs);
  } catch {
    return; // history below a restored snapshot: try again later
  }
  if (fromDoc === null || toDoc === null) return;
  const fromBalance = balanceOf(fromDoc.value);
  const amount = 1 + randomInt(client.random, 10);
  if (fromBalance < amount) return;
  const seq = client.nextSeq++;
  const key = `${client.name}:${seq}`;
  const unit: WriteUnit = {
    readTs,
    documents: [
      { tableNumber: TABLE, id: from, value: balanceText(fromBalance - amount), prevTs: fromDoc.ts },
      { tableNumber: TABLE, id: to, value: balanceText(balanceOf(toDoc.value) + amount), prevTs: toDoc.ts },
    ],
    indexWrites: [],
    receipt: { clientId: client.name, seq, result: JSON.stringify({ from, to, amount }), route: null },
    conflictsWith: (written) => written.kind === "document" && (written.id === from || written.id === to),
  };
  submitted(bank, key);
  bank.transfers.set(key, { from, to, amount });
  try {
    const result = await engine.commit(unit);
    acknowledged(bank, key, result.ts);
  } catch (error) {
    bank.outcomes.set(key, classifyFailure(error));
    if (errorKindOf(error) === "Corruption") client.violations.push(`${client.name}: commit ${key}: ${String(error)}`);
  }
}

function submitted(bank: Bank, key: string): void {
  bank.outcomes.set(key, { kind: "pending" });
  bank.order.submitted.set(key, bank.order.step++);
}

function acknowledged(bank: Bank, key: string, ts: number): void {
  bank.outcomes.set(key, { kind: "acknowledged", ts });
  bank.order.acknowledged.set(key, bank.order.step++);
}

/** What a refusal says about a unit: poisoned (or a bug) means it may have committed. */
export function classifyFailure(error: unknown): Outcome {
  if (hasErrorCode(error, "ENGINE_POISONED") || errorKindOf(error) === "Internal") return { kind: "unknown" };
  return { kind: "not-committed", code: (error as { code?: string }).code ?? "UNKNOWN" };
}

export function balanceText(balance: number): string {
  return JSON.stringify({ balance });
}

export function balanceOf(value: string): number {
  return (JSON.parse(value) as { balance: number }).balance;
}
