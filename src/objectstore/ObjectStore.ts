/**
 * The one interface every layer above uses to reach the bucket. Its contract holds on
 * every adapter (memory, fs, S3 against AWS, R2, MinIO and Ceph radosgw); one conformance
 * suite in test/objectstore checks it.
 *
 * Contract:
 * - Keys are relative to the store's root (an S3 URL's prefix, a directory). They are
 *   non-empty UTF-8, at most 1024 bytes, and compared by UTF-8 byte order.
 * - Etags are opaque strings without surrounding quotes; equal bodies written at
 *   different times may have equal etags (content hashes), so CAS bodies carry a nonce.
 * - `create` writes only if the key is absent; otherwise it fails with CAS_CONFLICT.
 * - `casPut` writes only if the key exists with exactly `etag`; a different etag or a
 *   missing key fails with CAS_CONFLICT.
 * - `delete` is idempotent: deleting a missing key succeeds. `deleteMany` is the same
 *   for many keys (one DeleteObjects request per 1000 keys on S3).
 * - `list` yields every key under `prefix` (strictly after `startAfter` if given) in
 *   UTF-8 byte order, paginating internally.
 * - A write that returned is durable and visible to every later `get` and `list`, and
 *   the adapter keeps no reference to its body: the caller may reuse the buffer (file
 *   uploads fill one buffer chunk after chunk).
 * - Transient trouble is retried inside the adapter with bounded backoff; what remains
 *   is thrown as STORE_TRANSIENT / STORE_UNREACHABLE.
 * - A conditional write whose answer was lost or proves nothing (a connection dropped
 *   after the request was sent, a 5xx, an unreadable 2xx) is never taken as "nothing was
 *   written". The adapter resolves it by reading the key back: its own bytes there mean
 *   it landed. That is sound because Cairn never writes the same bytes to a key twice
 *   as two different writes: every CAS body carries a fresh nonce and a higher version,
 *   and every segment is unique by its header (shard, seqno, epoch, writer, previous
 *   hash). Callers must keep it so. What the read-back cannot settle (a casPut whose key
 *   now holds other bytes under another etag: ours may have landed and been overwritten)
 *   is thrown as STORE_AMBIGUOUS_OUTCOME, never as success or CAS_CONFLICT; the caller
 *   resolves it by nonce (CasObject) or by re-reading.
 */
export interface ObjectStore {
  /** Human-readable location for messages and logs, e.g. "s3://bucket/prefix/". */
  readonly description: string;

  get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified">;
  create(key: string, body: Uint8Array): Promise<PutResult>;
  casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult>;
  delete(key: string): Promise<void>;
  deleteMany(keys: readonly string[]): Promise<void>;
  list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry>;
  /** Releases sockets and file handles. The store is unusable afterwards. */
  close(): Promise<void>;
}

export interface GetOptions {
  /** Answer "not-modified" instead of the body when the stored etag equals this one. */
  readonly ifNoneMatch?: string;
}

export interface GetResult {
  readonly body: Uint8Array;
  readonly etag: string;
}

export interface PutResult {
  readonly etag: string;
}

export interface ListOptions {
  /** Yield only keys strictly greater than this one (UTF-8 byte order). */
  readonly startAfter?: string;
}

export interface ListEntry {
  readonly key: string;
  readonly etag: string;
  readonly size: number;
}
