import { jwtPayload } from "./jwtPayload.js";

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
  const { exp, iat } = jwtPayload(token) ?? {};
  if (typeof exp !== "number" || typeof iat !== "number" || !Number.isFinite(exp - iat) || exp <= iat) return null;
  return (exp - iat) * 1000;
}
