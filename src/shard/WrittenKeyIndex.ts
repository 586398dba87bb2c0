import { SortedMap } from "../base/index.js";
import { compareKeyStrings, keyString } from "../model/index.js";
import type { ReadSet, WrittenKey } from "./WriteUnit.js";

/**
 * The keys some units wrote, each with a number (the newest ts that wrote it, or how many
 * pending units write it), indexed so that a read set is checked in time proportional to
 * its own size and to the written keys inside its ranges, not to the number of writes:
 * documents by id (ids embed their table), index keys in one sorted map per index.
 */
export class WrittenKeyIndex {
  private readonly documents = new Map<string, number>();
  private readonly receipts = new Map<string, number>();
  private readonly indexes = new Map<number, IndexKeys>();

  get size(): number {
    let size = this.documents.size + this.receipts.size;
    for (const keys of this.indexes.values()) size += keys.numbers.size;
    return size;
  }

  /** Sets each key's number to `update(current)` (undefined: the key is not held). */
  update(keys: readonly WrittenKey[], update: (current: number | undefined) => number | undefined): void {
    for (const key of keys) {
      if (key.kind === "document") {
        updateEntry(this.documents, key.id, update);
      } else if (key.kind === "receipt") {
        updateEntry(this.receipts, receiptName(key.clientId, key.seq), update);
      } else {
        let index = this.indexes.get(key.indexId);
        if (index === undefined) {
          index = new IndexKeys();
          this.indexes.set(key.indexId, index);
        }
        index.update(key.name, update);
      }
    }
  }

  /** Whether a key the read set covers holds a number satisfying `matches`. */
  touches(readSet: ReadSet, matches: (value: number) => boolean): boolean {
    for (const id of readSet.documents ?? []) {
      const value = this.documents.get(id);
      if (value !== undefined && matches(value)) return true;
    }
    for (const receipt of readSet.receipts ?? []) {
      const value = this.receipts.get(receiptName(receipt.clientId, receipt.seq));
      if (value !== undefined && matches(value)) return true;
    }
    for (const range of readSet.indexRanges ?? []) {
      const index = this.indexes.get(range.indexId);
      if (index === undefined || index.numbers.size === 0) continue;
      const end = range.end === null ? null : keyString(range.end);
      for (const key of index.sortedFrom(keyString(range.start))) {
        if (end !== null && key >= end) break;
        if (matches(index.numbers.get(key)!)) return true;
      }
    }
    return false;
  }

  clear(): void {
    this.documents.clear();
    this.receipts.clear();
    this.indexes.clear();
  }
}

/**
 * One index's written keys: the numbers in a hash map, and the keys in a sorted map for
 * range checks, kept sorted lazily. A key's number changes often (every unit that writes
 * it), and most units are checked by id alone (a mutation that read no range), so a key
 * that enters waits in `unsorted` and goes into the sorted map only when a range is
 * checked: a shard whose transactions read no ranges never pays for the B-tree (two
 * descents per key, entering and leaving, were a tenth of a writer's main thread).
 */
class IndexKeys {
  readonly numbers = new Map<string, number>();
  /** Holds every key of `numbers` not in `unsorted`, and no other. */
  private readonly sorted = new SortedMap<string, true>(undefined, compareKeyStrings);
  /** Keys that entered since the last range check; may hold keys since gone, and repeats. */
  private unsorted: string[] = [];

  update(name: string, update: (current: number | undefined) => number | undefined): void {
    const current = this.numbers.get(name);
    const next = update(current);
    if (next === undefined) {
      if (current === undefined) return;
      this.numbers.delete(name);
      // Not in the sorted map if it entered since the last range check: nothing to do then.
      if (this.sorted.size > 0) this.sorted.delete(name);
    } else {
      this.numbers.set(name, next);
      if (current !== undefined) return;
      this.unsorted.push(name);
      // Bounded by the keys held: what left is dropped, and each key that stays is kept once.
      if (this.unsorted.length > 1024 && this.unsorted.length > 2 * this.numbers.size) this.unsorted = [...new Set(this.unsorted.filter((key) => this.numbers.has(key)))];
    }
  }

  /** The keys held, in order, from `start` on. */
  sortedFrom(start: string): IterableIterator<string> {
    if (this.unsorted.length > 0) {
      for (const key of this.unsorted) if (this.numbers.has(key)) this.sorted.set(key, true);
      this.unsorted = [];
    }
    return this.sorted.keys(start);
  }
}

function updateEntry(map: Map<string, number>, name: string, update: (current: number | undefined) => number | undefined): void {
  const next = update(map.get(name));
  if (next === undefined) map.delete(name);
  else map.set(name, next);
}

function receiptName(clientId: string, seq: number): string {
  return `${seq}:${clientId}`;
}
