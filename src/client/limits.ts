/**
 * The client's bounds, named once with the reason for each value. They belong with the
 * others in base/limits.ts; they live here until that module takes them, since the
 * client may not edit it. Session bounds the server enforces (queries, topics, held
 * seqs) come from base/limits.ts itself.
 */

/**
 * First reconnect delay (before jitter); it doubles per failed attempt. 300 ms lets a
 * restarting server (which answers again within a second or two) be reached within one
 * or two attempts without a client spinning on a refused port.
 */
export const RECONNECT_BACKOFF_BASE_MS = 300;
/**
 * Ceiling of the reconnect delay (before jitter). With jitter a client waits 15–30 s,
 * so 100,000 clients of a server that is down cost it ~4,400 connection attempts per
 * second on average, and a client notices a recovered server within 30 s.
 */
export const RECONNECT_BACKOFF_MAX_MS = 30_000;
/** Bytes of a client id and of a session id: 128 bits, so ids never collide by chance. */
export const CLIENT_ID_BYTES = 16;
/**
 * Re-sends of a mutation whose outcome the server could not tell (ENGINE_POISONED,
 * WRITER_UNAVAILABLE with an unknown outcome, a durable commit not yet visible) before it
 * rejects with that answer. Each re-send carries the same (clientId, seq), so it is
 * answered from the receipt if it committed and never applied twice. With the backoff
 * below, 10 re-sends span ~50 s of waiting (plus each answer's own wait, up to a minute
 * for a forward): several failovers (~13 s each by default) fit in it.
 */
export const MUTATION_RESENDS_MAX = 10;
/** Wait before the first re-send of an unknown outcome; doubles per re-send up to the maximum. */
export const MUTATION_RESEND_BACKOFF_BASE_MS = 250;
/** Ceiling of the re-send wait: a writer taking over within a lease is found within 8 s of it. */
export const MUTATION_RESEND_BACKOFF_MAX_MS = 8_000;
/**
 * Bytes a Mutation or ModifyQuerySet frame adds around its arguments and path (type,
 * ids, seq, ackedThrough, JSON punctuation): a frame is refused client-side once its
 * arguments and path leave less than this under MESSAGE_BYTES_MAX.
 */
export const FRAME_OVERHEAD_BYTES = 512;
/** Bytes one query's entry adds to a ModifyQuerySet around its path and arguments (queryId, result hash, punctuation). */
export const QUERY_ENTRY_OVERHEAD_BYTES = 160;
/**
 * Wait before an outbox write that failed (a full disk, a storage quota) is tried again.
 * Mutations waiting for it are not sent meanwhile (sending one the outbox does not hold
 * could lose its seq in a crash); 1 s keeps a failing disk from being hammered while a
 * freed one is noticed quickly.
 */
export const OUTBOX_SAVE_RETRY_MS = 1_000;
/**
 * How long before a token's end the client replaces it: 30 s covers a slow token fetch
 * and a server clock a little ahead. A token living under a minute is replaced at half
 * its lifetime instead, so that the client does not refresh continually.
 */
export const TOKEN_REFRESH_MARGIN_MS = 30_000;
/** Least wait between two scheduled token refreshes: a provider issuing near-instant expiries costs one fetch a second, not a loop. */
export const TOKEN_REFRESH_DELAY_MIN_MS = 1_000;
/** Longest delay a timer takes (2^31 − 1 ms, ~24.8 days); a longer one fires at once in browsers and Node. A longer-lived token is refreshed early. */
export const TIMER_DELAY_MAX_MS = 2 ** 31 - 1;
