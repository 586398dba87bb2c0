import type { ShardEngine } from "../../src/shard/ShardEngine.js";
import { balanceOf, INITIAL_BALANCE, type Bank } from "./bank.js";
import type { FollowerObservation } from "./fleetChecks.js";

/**
 * A follower's reads of every shard at its common frontier (the minimum over its shards
 * of the applied frontier), as a node serving queries over all shards at one timestamp
 * does. At every read: no shard's frontier and not the common one goes back; a bank is
 * either not open yet or whole (each transfer stays on one shard, so a torn one shows as
 * a wrong total); a version once shown never changes. Every version shown is kept, for
 * the check against the whole log after the run.
 */
export class FrontierReader {
  readonly observations = new Map<string, FollowerObservation>();
  /** Reads of a bank that was open at the frontier. */
  reads = 0;
  private readonly shardFrontiers: number[];
  private frontier = 0;

  constructor(
    private readonly name: string,
    /** Per shard. */
    private readonly engines: readonly ShardEngine[],
    private readonly banks: readonly Bank[],
    private readonly violations: string[],
  ) {
    this.shardFrontiers = engines.map(() => 0);
  }

  read(): void {
    this.engines.forEach((engine, shard) => {
      if (engine.readTs < this.shardFrontiers[shard]!) this.violations.push(`${this.name}: shard ${shard}'s frontier went back from ${this.shardFrontiers[shard]} to ${engine.readTs}`);
      this.shardFrontiers[shard] = engine.readTs;
    });
    const frontier = Math.min(...this.engines.map((engine) => engine.readTs));
    if (frontier < this.frontier) this.violations.push(`${this.name}: the common frontier went back from ${this.frontier} to ${frontier}`);
    this.frontier = frontier;
    for (const bank of this.banks) this.readBank(bank, frontier);
  }

  private readBank(bank: Bank, frontier: number): void {
    const local = this.engines[bank.shard]!.local;
    let documents;
    try {
      documents = bank.accounts.map((id) => ({ id, version: local.get(id, frontier) }));
    } catch {
      return; // the shard restored a snapshot newer than the frontier: its history below is gone
    }
    const present = documents.flatMap(({ id, version }) => (version === null ? [] : [{ id, ts: version.ts, value: version.value }]));
    if (present.length === 0) return;
    this.reads++;
    const at = `shard ${bank.shard} at ${frontier}`;
    if (present.length < documents.length) this.violations.push(`${this.name}: ${at} shows ${present.length} of ${documents.length} accounts`);
    const total = present.reduce((sum, document) => sum + balanceOf(document.value), 0);
    if (total !== INITIAL_BALANCE * bank.accounts.length) this.violations.push(`${this.name}: ${at} shows a bank total of ${total}`);
    for (const { id, ts, value } of present) {
      const key = `${bank.shard}|${id}@${ts}`;
      const seen = this.observations.get(key);
      if (seen !== undefined && seen.value !== value) this.violations.push(`${this.name}: account ${id} at ${ts} changed from ${seen.value} to ${value}`);
      this.observations.set(key, { follower: this.name, shard: bank.shard, id, ts, value, frontierTs: frontier });
    }
  }
}
