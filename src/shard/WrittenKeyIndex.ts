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
  /**
   * Per index: the numbers in a hash map, and the keys alone in a sorted map for range
   * checks. A key's number changes often (every unit that writes it); it enters and
   * leaves the sorted map only once each, so most updates cost a hash lookup, not two
   * B-tree descents.
   */
  private readonly indexes = new Map<number, { readonly numbers: Map<string, number>; readonly sorted: SortedMap<string, true> }>();

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
          index = { numbers: new Map(), sorted: new SortedMap<string, true>(undefined, compareKeyStrings) };
          this.indexes.set(key.indexId, index);
        }
        const name = key.name;
        const current = index.numbers.get(name);
        const next = update(current);
        if (next === undefined) {
          if (current !== undefined) {
            index.numbers.delete(name);
            index.sorted.delete(name);
          }
        } else {
          index.numbers.set(name, next);
          if (current === undefined) index.sorted.set(name, true);
        }
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
      for (const key of index.sorted.keys(keyString(range.start))) {
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

function updateEntry(map: Map<string, number>, name: string, update: (current: number | undefined) => number | undefined): void {
  const next = update(map.get(name));
  if (next === undefined) map.delete(name);
  else map.set(name, next);
}

function receiptName(clientId: string, seq: number): string {
  return `${seq}:${clientId}`;
}
