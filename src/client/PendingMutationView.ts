import type { Value } from "../model/Value.js";
import { decodeValue } from "../model/ValueJson.js";
import type { AuthIdentity } from "./AuthIdentity.js";
import type { PendingMutation } from "./PendingMutations.js";

/** A mutation not settled yet, as `CairnClient.pendingMutations` shows it (e.g. a message greyed "sending…"). */
export interface PendingMutationView {
  /** Its receipt seq: stable across reloads, so a UI can key it. */
  readonly seq: number;
  readonly path: string;
  readonly args: Value;
  /**
   * `saving`: being written to the outbox; `sending`: on its way, or waiting for a
   * connection (or, restored, for the server to accept the token it needs);
   * `waitingForAuth`: issued under another identity than the client's auth now
   * (restored, or made as a user before the app signed out or in as another) — sent once
   * that identity signs in, never as another (`discardPendingMutations` drops it); `committed`: applied, waiting for the subscriptions to show it.
   */
  readonly state: "saving" | "sending" | "waitingForAuth" | "committed";
  /** The identity it was issued under: anonymous, a user (the `iss` and `sub` of the token then), or unknown. */
  readonly issuedAs: AuthIdentity;
  /** Read back from the outbox after a reload (nobody awaits it; a failure is reported through onError). */
  readonly restored: boolean;
}

export function pendingMutationView(mutation: PendingMutation): PendingMutationView {
  const { seq, path, restored, status, issuedAs } = mutation;
  const state = status.state === "saving" || status.state === "waitingForAuth" || status.state === "committed" ? status.state : "sending";
  return { seq, path, args: decodeArgs(mutation), state, issuedAs, restored };
}

/** Arguments the client encoded itself (or read from a checked outbox); a value that no longer decodes shows as null. */
function decodeArgs(mutation: PendingMutation): Value {
  try {
    return decodeValue(mutation.args);
  } catch {
    return null;
  }
}
