import { bucketLayout, parseSegmentSeqno, parseSnapshotSeqno } from "../../src/manifest/bucketLayout.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "../../src/objectstore/ObjectStore.js";

/**
 * An ObjectStore that passes every call through and counts the GETs by what they read
 * (log segments, the manifest, snapshot parts, anything else), so that a bootstrap can
 * say which of the endpoint's GetObject requests were log reads and which slots they
 * asked for. Counts one call per `get`, whatever retries the inner store made.
 */
export interface GetCounts {
  readonly log: number;
  /** Log GETs that found the slot empty (the probes that find the tail). */
  readonly logMissing: number;
  readonly logSeqnoMin: number | null;
  readonly logSeqnoMax: number | null;
  readonly manifest: number;
  readonly snapshot: number;
  readonly other: number;
}

export class CountingObjectStore implements ObjectStore {
  private readonly counts = { log: 0, logMissing: 0, manifest: 0, snapshot: 0, other: 0 };
  private logSeqnoMin: number | null = null;
  private logSeqnoMax: number | null = null;

  constructor(
    private readonly inner: ObjectStore,
    private readonly shard: number,
  ) {}

  get description(): string {
    return this.inner.description;
  }

  getCounts(): GetCounts {
    return { ...this.counts, logSeqnoMin: this.logSeqnoMin, logSeqnoMax: this.logSeqnoMax };
  }

  async get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified"> {
    const seqno = parseSegmentSeqno(this.shard, key);
    if (seqno !== null) this.countLogRead(seqno);
    else if (key === bucketLayout.manifest(this.shard)) this.counts.manifest++;
    else if (parseSnapshotSeqno(this.shard, key) !== null) this.counts.snapshot++;
    else this.counts.other++;
    const result = await this.inner.get(key, options);
    if (seqno !== null && result === null) this.counts.logMissing++;
    return result;
  }

  create(key: string, body: Uint8Array): Promise<PutResult> {
    return this.inner.create(key, body);
  }

  casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    return this.inner.casPut(key, body, etag);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  deleteMany(keys: readonly string[]): Promise<void> {
    return this.inner.deleteMany(keys);
  }

  list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry> {
    return this.inner.list(prefix, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private countLogRead(seqno: number): void {
    this.counts.log++;
    this.logSeqnoMin = Math.min(this.logSeqnoMin ?? seqno, seqno);
    this.logSeqnoMax = Math.max(this.logSeqnoMax ?? seqno, seqno);
  }
}
