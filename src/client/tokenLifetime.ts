/**
 * How long a JWT is valid from when it was issued (`exp` − `iat`, in ms), read from its
 * payload without verifying it (the server verifies; the client only plans its refresh).
 * Null for a token that is not a JWT or lacks either claim: such a token is replaced only
 * when the server says it expired or refuses it.
 *
 * The lifetime, not `exp` against the local clock: a browser's clock may be minutes off,
 * which would make the client refresh late (the session goes anonymous meanwhile) or in
 * a loop. The lifetime holds for a token the provider just issued (one fetched with
 * `forceRefresh`), however wrong the local clock.
 */
export function tokenLifetimeMs(token: string): number | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(base64UrlBytes(parts[1]!)));
  } catch {
    return null;
  }
  const { exp, iat } = (payload ?? {}) as { exp?: unknown; iat?: unknown };
  if (typeof exp !== "number" || typeof iat !== "number" || !Number.isFinite(exp - iat) || exp <= iat) return null;
  return (exp - iat) * 1000;
}

/** base64url without padding (RFC 7515) to bytes, with `atob`: present in browsers and Node, unlike Buffer. */
function base64UrlBytes(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("not base64url");
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let at = 0; at < binary.length; at++) bytes[at] = binary.charCodeAt(at);
  return bytes;
}
