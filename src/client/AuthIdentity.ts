import { jwtPayload } from "./jwtPayload.js";

/**
 * The identity a mutation was issued under, as the client can tell it: anonymous (no
 * token), a user named by the `iss` and `sub` of the token it held (read without
 * verification: the server is the judge; this only decides when a restored mutation may
 * be sent), or unknown — a token that is not a JWT with a string `sub`, or a mutation
 * restored from an outbox written before identities were recorded.
 *
 * (issuer, subject) is what the server keys a receipt's owner by (receiptOwner), so a
 * refreshed token of the same user is the same identity. An unknown identity equals no
 * identity, itself included: a mutation of unknown identity is never sent by itself.
 */
export type AuthIdentity =
  | { readonly kind: "anonymous" }
  | { readonly kind: "user"; readonly issuer: string | null; readonly subject: string }
  | { readonly kind: "unknown" };

export const ANONYMOUS: AuthIdentity = { kind: "anonymous" };
export const UNKNOWN_IDENTITY: AuthIdentity = { kind: "unknown" };

/** The identity a token names (null: anonymous). */
export function identityOfToken(token: string | null): AuthIdentity {
  if (token === null) return ANONYMOUS;
  const payload = jwtPayload(token);
  if (payload === null || typeof payload.sub !== "string") return UNKNOWN_IDENTITY;
  // The server's verifier takes `iss` only when it is a string; the receipt owner is [issuer ?? null, subject].
  return { kind: "user", issuer: typeof payload.iss === "string" ? payload.iss : null, subject: payload.sub };
}

export function sameIdentity(left: AuthIdentity, right: AuthIdentity): boolean {
  if (left.kind === "unknown" || right.kind === "unknown") return false;
  if (left.kind === "anonymous" || right.kind === "anonymous") return left.kind === right.kind;
  return left.issuer === right.issuer && left.subject === right.subject;
}

/** Whether two identities are written the same (unlike `sameIdentity`, unknown equals unknown): what an outbox record holds. */
export function equalIdentities(left: AuthIdentity, right: AuthIdentity): boolean {
  if (left.kind !== "user" || right.kind !== "user") return left.kind === right.kind;
  return left.issuer === right.issuer && left.subject === right.subject;
}

/** The identity in messages: "anonymous", "user ada (issuer https://auth.example)", "an unknown identity". */
export function describeIdentity(identity: AuthIdentity): string {
  switch (identity.kind) {
    case "anonymous":
      return "anonymous";
    case "user":
      return `user ${JSON.stringify(identity.subject)}${identity.issuer === null ? "" : ` (issuer ${JSON.stringify(identity.issuer)})`}`;
    case "unknown":
      return "an unknown identity";
  }
}
