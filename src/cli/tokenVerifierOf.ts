import { CairnError, systemClock } from "../base/index.js";
import { jwtVerifier, loadJwks, RemoteJwks } from "../server/index.js";
import type { TokenVerifier } from "../sync/index.js";

/** The auth flags of `cairn serve` and `cairn dev` (see docs/auth.md). */
export interface AuthFlags {
  readonly jwtSecret?: string;
  readonly jwks?: string;
  readonly jwksUrl?: string;
  readonly jwtIssuer?: string;
  readonly jwtAudience?: string;
}

/**
 * The token verifier the flags ask for, or null for anonymous clients only: one of a JWT
 * secret (--jwt-secret or CAIRN_JWT_SECRET), a JWKS file or a JWKS URL (fetched now; a
 * provider that is down is said, and its tokens are refused until it answers).
 */
export async function tokenVerifierOf(options: AuthFlags, say: (line: string) => void): Promise<TokenVerifier | null> {
  const secret = options.jwtSecret ?? (process.env["CAIRN_JWT_SECRET"] || undefined);
  const given = [secret !== undefined ? "a JWT secret" : null, options.jwks !== undefined ? "--jwks" : null, options.jwksUrl !== undefined ? "--jwks-url" : null].filter((name) => name !== null);
  if (given.length > 1) throw new CairnError("INVALID_ARGUMENT", `give one of a JWT secret (--jwt-secret or CAIRN_JWT_SECRET), --jwks or --jwks-url, not ${given.join(" and ")}`);
  if (given.length === 0) return null;
  let remoteJwks: RemoteJwks | undefined;
  if (options.jwksUrl !== undefined) {
    remoteJwks = new RemoteJwks({ url: options.jwksUrl, clock: systemClock, log: say });
    if (await remoteJwks.start()) say(`JWKS fetched from ${remoteJwks.url}`);
  }
  return jwtVerifier({
    ...(secret !== undefined ? { secret } : remoteJwks !== undefined ? { remoteJwks } : { jwks: loadJwks(options.jwks!) }),
    ...(options.jwtIssuer !== undefined ? { issuer: options.jwtIssuer } : {}),
    ...(options.jwtAudience !== undefined ? { audience: options.jwtAudience } : {}),
  });
}
