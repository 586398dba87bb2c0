import { readFileSync } from "node:fs";
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { CairnError } from "../base/index.js";
import type { TokenVerifier, VerifiedToken } from "../sync/index.js";
import type { RemoteJwks } from "./RemoteJwks.js";

export interface JwtVerifierOptions {
  /** HS256 shared secret (at least 32 bytes: shorter secrets can be brute-forced offline). */
  readonly secret?: string;
  /** A JSON Web Key Set of public keys (RS256 / ES256), e.g. read from a file with loadJwks. */
  readonly jwks?: JSONWebKeySet;
  /** The provider's key set fetched from its URL (RS256 / ES256), started by the caller. */
  readonly remoteJwks?: RemoteJwks;
  /** When set, tokens must carry this `iss`. */
  readonly issuer?: string;
  /** When set, tokens must carry this `aud`. */
  readonly audience?: string;
  /** Tolerated clock difference for `exp`/`nbf`, in seconds (default 5). */
  readonly clockToleranceSec?: number;
}

const SECRET_BYTES_MIN = 32;

/**
 * The default token verifier: JWTs checked with `jose` — signature (HS256 against the
 * secret, or RS256/ES256 against the key set, given or fetched), `exp`/`nbf`, and issuer/audience when
 * configured. The identity is the token's claims with `sub` as `subject` (required).
 * Every refusal is UNAUTHENTICATED with jose's reason.
 */
export function jwtVerifier(options: JwtVerifierOptions): TokenVerifier {
  const { secret, jwks, remoteJwks } = options;
  if ([secret, jwks, remoteJwks].filter((key) => key !== undefined).length !== 1) {
    throw new CairnError("INVALID_ARGUMENT", "a JWT verifier needs exactly one of a secret (HS256), a JWKS (RS256/ES256) or a JWKS URL");
  }
  if (secret !== undefined && new TextEncoder().encode(secret).byteLength < SECRET_BYTES_MIN) {
    throw new CairnError("INVALID_ARGUMENT", `the JWT secret must be at least ${SECRET_BYTES_MIN} bytes`);
  }
  const key: Uint8Array | JWTVerifyGetKey = secret !== undefined ? new TextEncoder().encode(secret) : remoteJwks !== undefined ? remoteJwks.getKey : createLocalJWKSet(jwks!);
  const algorithms = secret !== undefined ? ["HS256"] : ["RS256", "ES256"];
  const checks = {
    algorithms,
    clockTolerance: options.clockToleranceSec ?? 5,
    ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
    ...(options.audience !== undefined ? { audience: options.audience } : {}),
  };
  return {
    async verify(token: string): Promise<VerifiedToken> {
      let payload;
      try {
        // Two calls because jose's overloads (a key, or a key-set getter) do not accept their union.
        ({ payload } = typeof key === "function" ? await jwtVerify(token, key, checks) : await jwtVerify(token, key, checks));
      } catch (error) {
        throw new CairnError("UNAUTHENTICATED", `token refused: ${(error as Error).message}`);
      }
      if (typeof payload.sub !== "string" || payload.sub.length === 0) throw new CairnError("UNAUTHENTICATED", "token refused: it has no `sub` claim");
      // `subject` and `issuer` always mean `sub` and `iss`: claims of those names are dropped, not passed through.
      const { sub, iss, subject: _subject, issuer: _issuer, ...claims } = payload;
      return {
        identity: { ...claims, subject: sub, ...(typeof iss === "string" ? { issuer: iss } : {}) },
        expiresAtMs: typeof payload.exp === "number" ? payload.exp * 1000 : null,
      };
    },
  };
}

/** Reads a JWKS file ({"keys": [...]}); INVALID_ARGUMENT naming the file when it is not one. */
export function loadJwks(path: string): JSONWebKeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new CairnError("INVALID_ARGUMENT", `cannot read the JWKS file ${path}: ${(error as Error).message}`);
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((entry) => typeof entry === "object" && entry !== null)) {
    throw new CairnError("INVALID_ARGUMENT", `the JWKS file ${path} must hold {"keys": [ ... ]} with at least one key`);
  }
  return parsed as JSONWebKeySet;
}
