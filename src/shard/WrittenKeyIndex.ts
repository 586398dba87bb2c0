import { SortedMap } from "../base/SortedMap.js";
import { compareKeyStrings, keyString } from "../model/keyString.js";
import type { ReadSet, WrittenKey } from "./WriteUnit.js";

/**
 * The keys some units wrote, each with a number (the newest ts that wrote it, or how many
 * pending units write it), indexed so that a read set is checked in time proportional to
 * its own size and to the written keys inside its ranges, not to the number of writes:
 * documents by id (ids embed their table), index keys in one sorted map per index.
 */
export class WrittenKeyIndex {
  private readonly documents = new Map<string, number>();
  private readonly indexes = new Map<number, SortedMap<string, number>>();

  get size(): number {
    let size = this.documents.size;
    for (const keys of this.indexes.values()) size += keys.size;
    return size;
  }

  /** Sets each key's number to `update(current)` (undefined: the key is not held). */
  update(keys: readonly WrittenKey[], update: (current: number | undefined) => number | undefined): void {
    for (const key of keys) {
      if (key.kind === "document") {
        const next = update(this.documents.get(key.id));
        if (next === undefined) this.documents.delete(key.id);
        else this.documents.set(key.id, next);
      } else {
        let tree = this.indexes.get(key.indexId);
        if (tree === undefined) this.indexes.set(key.indexId, (tree = new SortedMap<string, number>(undefined, compareKeyStrings)));
        const name = keyString(key.key);
        const next = update(tree.get(name));
        if (next === undefined) tree.delete(name);
        else tree.set(name, next);
      }
    }
  }

  /** Whether a key the read set covers holds a number satisfying `matches`. */
  touches(readSet: ReadSet, matches: (value: number) => boolean): boolean {
    for (const id of readSet.documents ?? []) {
      const value = this.documents.get(id);
      if (value !== undefined && matches(value)) return true;
    }
    for (const range of readSet.indexRanges ?? []) {
      const tree = this.indexes.get(range.indexId);
      if (tree === undefined || tree.size === 0) continue;
      const end = range.end === null ? null : keyString(range.end);
      for (const [key, value] of tree.entries(keyString(range.start))) {
        if (end !== null && key >= end) break;
        if (matches(value)) return true;
      }
    }
    return false;
  }

  clear(): void {
    this.documents.clear();
    this.indexes.clear();
  }
}
