import { CairnError } from "../base/index.js";
import { assertValidKey } from "./keys.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";

/**
 * A view of the keys under `prefix` of another store, as if they were a store of their
 * own: every key is prefixed on the way in and stripped on the way out. A deployment's
 * shards of one layout generation live under such a prefix (DESIGN.md §10), so the shard
 * code reads and writes the same relative keys whatever generation it serves.
 *
 * Relative keys are checked as keys of their own (an empty one stays invalid), so the
 * view passes the same conformance suite as the stores it wraps.
 *
 * The view does not own the inner store: `close` leaves it open for its other users.
 */
export class PrefixedObjectStore implements ObjectStore {
  readonly description: string;

  constructor(
    private readonly inner: ObjectStore,
    private readonly prefix: string,
  ) {
    if (prefix.length === 0 || !prefix.endsWith("/")) {
      throw new CairnError("INVALID_ARGUMENT", `a store prefix must be non-empty and end with "/", not ${JSON.stringify(prefix)}`);
    }
    this.description = `${inner.description.replace(/\/?$/, "/")}${prefix}`;
  }

  async get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified"> {
    assertValidKey(key);
    return this.inner.get(this.prefix + key, options);
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    assertValidKey(key);
    return this.inner.create(this.prefix + key, body);
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    assertValidKey(key);
    return this.inner.casPut(this.prefix + key, body, etag);
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    return this.inner.delete(this.prefix + key);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertValidKey(key);
    return this.inner.deleteMany(keys.map((key) => this.prefix + key));
  }

  async *list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry> {
    const startAfter = options?.startAfter;
    const inner = this.inner.list(this.prefix + prefix, startAfter === undefined ? {} : { startAfter: this.prefix + startAfter });
    for await (const entry of inner) yield { ...entry, key: entry.key.slice(this.prefix.length) };
  }

  /** Nothing to release: the inner store belongs to whoever made this view. */
  async close(): Promise<void> {}
}
