import { createHash } from "node:crypto";
import type { UserIdentity } from "./registration.js";

/**
 * The owner a receipt records (DESIGN.md §8): the identity that wrote it, so that only a
 * call of the same identity is answered from it and no other identity's call runs under
 * its key. A verified identity is named by a hash of its issuer and subject (the same
 * for every token of that user, so a refreshed token keeps its receipts; 128 bits, so
 * two users never share one by chance, and no subject is spelled out in the log); an
 * anonymous caller by ANONYMOUS_OWNER.
 */
export const ANONYMOUS_OWNER = "anonymous";

export function receiptOwnerOf(identity: UserIdentity | null | undefined): string {
  if (identity === null || identity === undefined) return ANONYMOUS_OWNER;
  const digest = createHash("sha256").update(JSON.stringify([identity.issuer ?? null, identity.subject])).digest("base64url");
  return `user:${digest.slice(0, 22)}`;
}

/** Whether a receipt of `owner` answers a call of `caller` (a receipt from before owners answers anyone). */
export function ownsReceipt(caller: string, owner: string | undefined): boolean {
  return owner === undefined || owner === caller;
}
