import type { ChecksumAlgorithm } from "./checksums.js";
import { compareUtf8 } from "./keyOrder.js";

/**
 * The endpoint's state: buckets of objects, all in memory.
 *
 * Invariants:
 * - `Bucket.sortedKeys` holds exactly the keys of `Bucket.objects`, in UTF-8 byte order,
 *   without duplicates.
 * - A stored object is never mutated: a write replaces it whole, so a reader holding one
 *   sees a consistent body, etag and metadata.
 * - Every method is synchronous. A check followed by a write inside one call cannot
 *   interleave with another request (Node runs one callback at a time), which is what
 *   makes conditional writes atomic per key.
 */

export interface StoredChecksum {
  readonly algorithm: ChecksumAlgorithm;
  /** Base64 of the big-endian digest, as sent and returned in `x-amz-checksum-*`. */
  readonly value: string;
}

export interface StoredObject {
  readonly body: Uint8Array;
  /** Unquoted lowercase hex MD5 of the body. */
  readonly etag: string;
  /** Real time of the write, milliseconds since the Unix epoch. */
  readonly lastModifiedMs: number;
  /** Headers stored with the object and returned on GET/HEAD (Content-Type, x-amz-meta-* …). */
  readonly headers: Readonly<Record<string, string>>;
  /** The checksum the writer supplied, if any. */
  readonly checksum: StoredChecksum | undefined;
}

export class Bucket {
  readonly name: string;
  private readonly objects = new Map<string, StoredObject>();
  private readonly sortedKeys: string[] = [];

  constructor(name: string) {
    this.name = name;
  }

  get(key: string): StoredObject | undefined {
    return this.objects.get(key);
  }

  put(key: string, object: StoredObject): void {
    if (!this.objects.has(key)) this.sortedKeys.splice(this.firstIndexAtOrAfter(key), 0, key);
    this.objects.set(key, object);
  }

  /** Returns whether the key existed. */
  delete(key: string): boolean {
    if (!this.objects.delete(key)) return false;
    this.sortedKeys.splice(this.firstIndexAtOrAfter(key), 1);
    return true;
  }

  get size(): number {
    return this.sortedKeys.length;
  }

  /** The key at a position of the sorted order. */
  keyAt(index: number): string | undefined {
    return this.sortedKeys[index];
  }

  /** Position of the first key >= `key` (UTF-8 order). */
  firstIndexAtOrAfter(key: string): number {
    return this.firstIndexWhere((candidate) => compareUtf8(candidate, key) >= 0);
  }

  /** Position of the first key > `key`. */
  firstIndexAfter(key: string): number {
    return this.firstIndexWhere((candidate) => compareUtf8(candidate, key) > 0);
  }

  /**
   * Position of the first key that neither sorts before `prefix` nor starts with it. Keys
   * starting with a prefix are contiguous in sorted order, so this skips all of them.
   */
  firstIndexPastPrefix(prefix: string): number {
    return this.firstIndexWhere((candidate) => compareUtf8(candidate, prefix) > 0 && !candidate.startsWith(prefix));
  }

  /** Binary search for the first position where a monotone predicate becomes true. */
  private firstIndexWhere(predicate: (key: string) => boolean): number {
    let low = 0;
    let high = this.sortedKeys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (predicate(this.sortedKeys[middle])) high = middle;
      else low = middle + 1;
    }
    return low;
  }
}

export class Buckets {
  private readonly byName = new Map<string, Bucket>();

  get(name: string): Bucket | undefined {
    return this.byName.get(name);
  }

  /** Creates the bucket; returns false if it already existed. */
  create(name: string): boolean {
    if (this.byName.has(name)) return false;
    this.byName.set(name, new Bucket(name));
    return true;
  }
}

/**
 * S3's bucket naming rules, simplified to what matters for tests: 3–63 characters of
 * lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit,
 * and no `..`.
 */
export function isValidBucketName(name: string): boolean {
  return /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) && !name.includes("..");
}
