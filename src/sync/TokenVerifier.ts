import type { UserIdentity } from "../functions/index.js";

/**
 * Turns the token of a SetAuth (or an HTTP Authorization header) into the identity
 * functions see as `ctx.auth`. Pluggable: the server's default verifies JWTs; tests and
 * embedders may pass their own. A refused token rejects with UNAUTHENTICATED.
 */
export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

export interface VerifiedToken {
  readonly identity: UserIdentity;
  /** When the token stops being valid (ms since the epoch), or null if it does not expire. */
  readonly expiresAtMs: number | null;
}
