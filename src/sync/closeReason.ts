/** The WebSocket protocol's bound on a close frame's reason (RFC 6455 §5.5: a 125-byte payload, 2 of them the code). */
export const CLOSE_REASON_BYTES_MAX = 123;

const encoder = new TextEncoder();

/**
 * `reason` cut to at most CLOSE_REASON_BYTES_MAX bytes of UTF-8, never in the middle of
 * a character: `ws` throws on a longer reason, and a reason often echoes client text (a
 * validation message), so every close with a reason goes through here.
 */
export function closeReason(reason: string): string {
  if (reason.length * 3 <= CLOSE_REASON_BYTES_MAX) return reason;
  const bytes = new Uint8Array(CLOSE_REASON_BYTES_MAX);
  // encodeInto writes whole characters only (a lone surrogate becomes U+FFFD, 3 bytes).
  const { read } = encoder.encodeInto(reason, bytes);
  return reason.slice(0, read);
}
