/**
 * Every bound in Cairn, named once, with the reason for its value. Code refers to these
 * constants; options that override them carry units in their names.
 */

// ---- object store -------------------------------------------------------------------

/** S3 ListObjectsV2 returns at most 1000 keys per page; asking for more is ignored. */
export const LIST_PAGE_KEYS_MAX = 1000;
/** S3 DeleteObjects accepts at most 1000 keys per request. */
export const DELETE_BATCH_KEYS_MAX = 1000;
/**
 * Attempts for one store operation that failed transiently (503 SlowDown, 500, 429,
 * connection reset). 6 attempts with the backoff below span ~3 s, longer than a typical
 * S3 throttling burst, short enough that a dead endpoint surfaces quickly.
 */
export const STORE_ATTEMPTS_MAX = 6;
/** First backoff after a transient error; doubles per attempt with full jitter. */
export const STORE_BACKOFF_BASE_MS = 50;
/** Backoff ceiling: R2 allows one write per second per key, so never wait much longer. */
export const STORE_BACKOFF_MAX_MS = 1_000;
/** S3 keys are at most 1024 bytes of UTF-8. */
export const STORE_KEY_BYTES_MAX = 1024;

// ---- values and documents ------------------------------------------------------------

/** Largest encoded document. Bigger values belong in file storage, not a document log. */
export const DOCUMENT_BYTES_MAX = 1024 * 1024;
/** Deepest nesting of arrays/objects; bounds recursion in encoders and validators. */
export const VALUE_DEPTH_MAX = 64;
