import { createHash } from "node:crypto";

/**
 * The hash a client echoes on reconnect (`resultHash`) so an unchanged result is answered
 * with QueryUnchanged instead of the value again. 128 bits of sha256 over the result's
 * encoded text: collisions are not a practical concern, and the text is what the client
 * holds, so equal hashes mean equal results.
 */
export function resultHash(encodedText: string): string {
  return createHash("sha256").update(encodedText).digest("base64url").slice(0, 22);
}
