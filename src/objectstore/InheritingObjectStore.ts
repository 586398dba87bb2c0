import { z } from "zod";
import { CairnError } from "../base/index.js";
import { assertValidKey, compareKeys } from "./keys.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";

/**
 * A store that also shows, read-only, some keys of another store: a branch deployment's
 * root (DESIGN.md §10a) sees the immutable segments and snapshot parts of its parent below
 * the fork point without a byte of them copied.
 *
 * The link is an object of the store itself (`PARENT_LINK_KEY`), written once (create-only)
 * before anything else, so that every opener of the store (openObjectStore) sees the same
 * view. It names the parent by URL and lists what is inherited as inclusive key ranges.
 *
 * Invariants:
 * - An inherited key is read from the parent, every other key from the store itself; the
 *   two never overlap: creating an inherited key fails as creating an existing key does
 *   (CAS_CONFLICT), a casPut of one is refused, and `list` merges both in key order.
 * - Deleting an inherited key does nothing: the store does not own it. Deleting the whole
 *   view (a branch deleted) frees only the store's own objects.
 * - The parent is opened with the same options as the store (credentials included) and
 *   is closed with it; a parent may itself inherit (a branch of a branch), up to
 *   PARENT_LINK_DEPTH_MAX links.
 */
export const PARENT_LINK_KEY = "parent";
export const PARENT_LINK_FORMAT = 1;
/** A chain of branches deeper than this is refused (and a link that loops ends here). */
export const PARENT_LINK_DEPTH_MAX = 16;

const keyRangeSchema = z.union([
  z.object({ from: z.string().min(1), through: z.string().min(1) }).refine((range) => compareKeys(range.from, range.through) <= 0, "a range's from must not follow its through"),
  /** Every key that starts with `prefix` (however long). */
  z.object({ prefix: z.string().min(1) }),
]);

export const parentLinkSchema = z.object({
  format: z.literal(PARENT_LINK_FORMAT),
  /** The parent store's URL (an absolute directory, or an s3:// URL). */
  parentUrl: z.string().min(1),
  /** Inherited keys: every key k with from <= k <= through (UTF-8 byte order) of some range, or starting with its prefix. */
  ranges: z.array(keyRangeSchema),
});

export type ParentLink = z.infer<typeof parentLinkSchema>;
export type KeyRange = z.infer<typeof keyRangeSchema>;

/** Every key that starts with `prefix`. */
export function prefixRange(prefix: string): KeyRange {
  return { prefix };
}

function inRange(range: KeyRange, key: string): boolean {
  if ("prefix" in range) return key.startsWith(range.prefix);
  return compareKeys(range.from, key) <= 0 && compareKeys(key, range.through) <= 0;
}

export function encodeParentLink(link: ParentLink): Uint8Array {
  return Buffer.from(JSON.stringify(parentLinkSchema.parse(link)), "utf8");
}

/** The link of `store`, or null when it inherits nothing; STORE_LINK_INVALID when it cannot be read. */
export async function readParentLink(store: ObjectStore): Promise<ParentLink | null> {
  const found = await store.get(PARENT_LINK_KEY);
  if (found === null || found === "not-modified") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(found.body).toString("utf8"));
  } catch (error) {
    throw invalidLink(store, "it is not JSON", error);
  }
  const result = parentLinkSchema.safeParse(parsed);
  if (!result.success) throw invalidLink(store, z.prettifyError(result.error));
  return result.data;
}

function invalidLink(store: ObjectStore, reason: string, cause?: unknown): CairnError {
  return new CairnError("STORE_LINK_INVALID", `the parent link ${PARENT_LINK_KEY} of ${store.description} is unreadable: ${reason}`, {
    ...(cause === undefined ? {} : { cause }),
    details: { store: store.description },
  });
}

export class InheritingObjectStore implements ObjectStore {
  readonly description: string;

  constructor(
    private readonly own: ObjectStore,
    private readonly parent: ObjectStore,
    private readonly ranges: readonly KeyRange[],
  ) {
    this.description = own.description;
  }

  /** Whether `key` is the parent's (read from there, never written or deleted here). */
  inherits(key: string): boolean {
    return this.ranges.some((range) => inRange(range, key));
  }

  async get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified"> {
    assertValidKey(key);
    return this.inherits(key) ? this.parent.get(key, options) : this.own.get(key, options);
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    assertValidKey(key);
    if (this.inherits(key) && (await this.parent.get(key)) !== null) {
      throw new CairnError("CAS_CONFLICT", `${key} exists (inherited from ${this.parent.description})`, { details: { key } });
    }
    if (this.inherits(key)) throw readOnly(key, this.parent);
    return this.own.create(key, body);
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    assertValidKey(key);
    if (this.inherits(key)) throw readOnly(key, this.parent);
    return this.own.casPut(key, body, etag);
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    if (!this.inherits(key)) await this.own.delete(key);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertValidKey(key);
    const owned = keys.filter((key) => !this.inherits(key));
    if (owned.length > 0) await this.own.deleteMany(owned);
  }

  /** The store's own objects alone, without the inherited ones: what deleting the view frees. */
  get ownStore(): ObjectStore {
    return this.own;
  }

  async *list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry> {
    const inherited = await this.inheritedUnder(prefix, options?.startAfter);
    let next = 0;
    for await (const entry of this.own.list(prefix, options)) {
      // An own key inside an inherited range (written before the link, by hand) is hidden by it.
      if (this.inherits(entry.key)) continue;
      while (next < inherited.length && compareKeys(inherited[next]!.key, entry.key) < 0) yield inherited[next++]!;
      yield entry;
    }
    while (next < inherited.length) yield inherited[next++]!;
  }

  /** The parent's entries under `prefix` (after `startAfter`) that this store inherits, in key order. */
  private async inheritedUnder(prefix: string, startAfter: string | undefined): Promise<ListEntry[]> {
    // By key: ranges may overlap, and a key is listed once.
    const entries = new Map<string, ListEntry>();
    for (const range of this.ranges) {
      const listed = commonListing(range, prefix);
      if (listed === null) continue;
      const after = [startAfter, "prefix" in range ? undefined : beforeKey(range.from)].filter((key): key is string => key !== undefined).sort(compareKeys).at(-1);
      for await (const entry of this.parent.list(listed, after === undefined ? {} : { startAfter: after })) {
        if (!("prefix" in range) && compareKeys(entry.key, range.through) > 0) break;
        if (inRange(range, entry.key) && entry.key.startsWith(prefix)) entries.set(entry.key, entry);
      }
    }
    return [...entries.values()].sort((a, b) => compareKeys(a.key, b.key));
  }

  async close(): Promise<void> {
    await Promise.all([this.own.close(), this.parent.close()]);
  }
}

function readOnly(key: string, parent: ObjectStore): CairnError {
  return new CairnError("INVALID_ARGUMENT", `${key} is inherited from ${parent.description} and cannot be written here`, { details: { key } });
}

/**
 * The prefix to LIST the parent under for the keys of `range` under `prefix`: the longer
 * of the two when one extends the other, or null when no key can be in both.
 */
function commonListing(range: KeyRange, prefix: string): string | null {
  if ("prefix" in range) {
    if (prefix.startsWith(range.prefix)) return prefix;
    return range.prefix.startsWith(prefix) ? range.prefix : null;
  }
  const shared = sharedPrefix(range.from, range.through);
  if (prefix.startsWith(shared)) {
    // Keys under `prefix` lie in [prefix, the first key after all of them): some are in the
    // range unless it ends before `prefix` or starts after every key under it.
    const endsBefore = compareKeys(range.through, prefix) < 0;
    const startsAfter = compareKeys(range.from, prefix) > 0 && !range.from.startsWith(prefix);
    return endsBefore || startsAfter ? null : prefix;
  }
  return shared.startsWith(prefix) ? shared : null;
}

function sharedPrefix(a: string, b: string): string {
  let length = 0;
  while (length < a.length && length < b.length && a[length] === b[length]) length++;
  // Never split a surrogate pair.
  if (length > 0 && /[\ud800-\udbff]/.test(a[length - 1]!)) length--;
  return a.slice(0, length);
}

/** A key just before `key` for LIST's exclusive `startAfter`: `key` minus its last character (a whole code point), or undefined. */
function beforeKey(key: string): string | undefined {
  const characters = Array.from(key);
  return characters.length > 1 ? characters.slice(0, -1).join("") : undefined;
}
