import { createHash } from "node:crypto";
import { CairnError } from "../base/index.js";
import { assertValidKey, compareKeys } from "./keys.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";

interface StoredObject {
  readonly body: Uint8Array;
  readonly etag: string;
}

/**
 * An in-process bucket for unit tests and simulations. Etags are MD5 content hashes, as
 * on S3, so tests see the same "equal bodies, equal etags" behaviour as real stores.
 * Named instances (`mem://name`) are shared within the process.
 */
export class MemoryObjectStore implements ObjectStore {
  private static readonly named = new Map<string, Map<string, StoredObject>>();
  private readonly objects: Map<string, StoredObject>;
  readonly description: string;

  constructor(name?: string) {
    if (name === undefined) {
      this.objects = new Map();
      this.description = "mem://(anonymous)";
    } else {
      let objects = MemoryObjectStore.named.get(name);
      if (!objects) {
        objects = new Map();
        MemoryObjectStore.named.set(name, objects);
      }
      this.objects = objects;
      this.description = `mem://${name}`;
    }
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null | "not-modified"> {
    assertValidKey(key);
    const stored = this.objects.get(key);
    if (!stored) return null;
    if (options.ifNoneMatch !== undefined && options.ifNoneMatch === stored.etag) return "not-modified";
    return { body: stored.body.slice(), etag: stored.etag };
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    assertValidKey(key);
    if (this.objects.has(key)) throw casConflict(key, "key exists");
    return this.store(key, body);
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    assertValidKey(key);
    const stored = this.objects.get(key);
    if (!stored) throw casConflict(key, "key is missing");
    if (stored.etag !== etag) throw casConflict(key, "etag differs");
    return this.store(key, body);
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    this.objects.delete(key);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertValidKey(key);
    for (const key of keys) this.objects.delete(key);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<ListEntry> {
    const keys = [...this.objects.keys()]
      .filter((key) => key.startsWith(prefix))
      .filter((key) => options.startAfter === undefined || compareKeys(key, options.startAfter) > 0)
      .sort(compareKeys);
    for (const key of keys) {
      const stored = this.objects.get(key);
      if (stored) yield { key, etag: stored.etag, size: stored.body.byteLength };
    }
  }

  async close(): Promise<void> {}

  private store(key: string, body: Uint8Array): PutResult {
    const copy = new Uint8Array(body);
    const etag = createHash("md5").update(copy).digest("hex");
    this.objects.set(key, { body: copy, etag });
    return { etag };
  }
}

function casConflict(key: string, reason: string): CairnError {
  return new CairnError("CAS_CONFLICT", `conditional write to ${key} lost: ${reason}`, { details: { key } });
}
