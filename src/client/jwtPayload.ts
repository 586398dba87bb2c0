/**
 * A JWT's payload, read without verifying the token: the server verifies it. The client
 * reads claims only to plan (when to refresh a token, which identity a mutation was
 * issued under), never to grant anything. Null for a token that is not a JWT or whose
 * payload is not a JSON object.
 */
export function jwtPayload(token: string): Readonly<Record<string, unknown>> | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(base64UrlBytes(parts[1]!)));
  } catch {
    return null;
  }
  return typeof payload === "object" && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : null;
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
