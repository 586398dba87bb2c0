import { systemClock } from "../base/index.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";

export type StoreOperation = "get" | "create" | "casPut" | "delete" | "deleteMany" | "list";

/** One finished store call: its operation, whether it threw, and how long it took. */
export interface StoreCall {
  readonly operation: StoreOperation;
  readonly outcome: "ok" | "error";
  readonly durationMs: number;
}

/**
 * An ObjectStore that reports every call to `observe` (for metrics), changing nothing
 * else. A call is one interface call: the adapter's own retries inside it are not
 * counted separately; a `list` is reported once when its iteration ends.
 */
export class ObservedObjectStore implements ObjectStore {
  readonly description: string;

  constructor(
    private readonly inner: ObjectStore,
    private readonly observe: (call: StoreCall) => void,
    private readonly monotonicMs: () => number = () => systemClock.monotonicMs(),
  ) {
    this.description = inner.description;
  }

  get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified"> {
    return this.timed("get", () => this.inner.get(key, options));
  }

  create(key: string, body: Uint8Array): Promise<PutResult> {
    return this.timed("create", () => this.inner.create(key, body));
  }

  casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    return this.timed("casPut", () => this.inner.casPut(key, body, etag));
  }

  delete(key: string): Promise<void> {
    return this.timed("delete", () => this.inner.delete(key));
  }

  deleteMany(keys: readonly string[]): Promise<void> {
    return this.timed("deleteMany", () => this.inner.deleteMany(keys));
  }

  async *list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry> {
    const startedMs = this.monotonicMs();
    let outcome: StoreCall["outcome"] = "error";
    try {
      yield* this.inner.list(prefix, options);
      outcome = "ok";
    } finally {
      this.report("list", outcome, startedMs);
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async timed<T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> {
    const startedMs = this.monotonicMs();
    try {
      const result = await call();
      this.report(operation, "ok", startedMs);
      return result;
    } catch (error) {
      this.report(operation, "error", startedMs);
      throw error;
    }
  }

  private report(operation: StoreOperation, outcome: StoreCall["outcome"], startedMs: number): void {
    try {
      this.observe({ operation, outcome, durationMs: this.monotonicMs() - startedMs });
    } catch {
      // An observer's failure must not change what the store does.
    }
  }
}
