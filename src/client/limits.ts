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
