/**
 * The bounds the test endpoint enforces, each with the reason for its value. Bounds that
 * S3 itself has mirror S3; the others keep a test process from running out of memory.
 * They are deliberately not imported from src/base/limits.ts: the endpoint stands in for
 * S3, so it must not move when Cairn changes its own choices.
 */

/**
 * Largest request body accepted. Everything is held in memory; 64 MiB is far above any
 * Cairn object (segments and snapshot parts stay in single-digit MiB) and keeps a runaway
 * test from exhausting the heap.
 */
export const REQUEST_BODY_BYTES_MAX = 64 * 1024 * 1024;

/** S3 rejects a signed request whose time differs from the server's by more than 15 minutes. */
export const REQUEST_TIME_SKEW_MS_MAX = 15 * 60 * 1000;

/** S3 keys are at most 1024 bytes of UTF-8. */
export const OBJECT_KEY_BYTES_MAX = 1024;

/** ListObjectsV2 returns at most 1000 entries per page; larger max-keys values are capped. */
export const LIST_PAGE_KEYS_MAX = 1000;

/** DeleteObjects accepts at most 1000 keys per request. */
export const DELETE_BATCH_KEYS_MAX = 1000;

/** R2 allows one write per second to the same key and answers 429 above that. */
export const R2_KEY_WRITE_INTERVAL_MS = 1000;

/**
 * Idle keep-alive sockets stay open this long. Longer than the SDK's idle reuse window so
 * that the server never closes a socket the client is about to reuse (which would surface
 * as a spurious ECONNRESET); close() destroys them regardless.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * Largest aws-chunked chunk accepted. The SDK sends 64 KiB chunks; anything larger than
 * the whole body limit is malformed by definition.
 */
export const AWS_CHUNK_BYTES_MAX = REQUEST_BODY_BYTES_MAX;
