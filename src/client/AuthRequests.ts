import type { ClientMessage } from "../sync/protocol.js";
import { CredentialRequests } from "./CredentialRequests.js";

/** A `setAuth` call waiting for its AuthResponse. */
export interface AuthWaiter {
  /** With the verified subject (null: anonymous). */
  readonly resolve: (subject: string | null) => void;
  readonly reject: (error: unknown) => void;
}

/** The auth token (null: anonymous) and the `setAuth` calls waiting for their AuthResponse (CredentialRequests' rules). */
export class AuthRequests extends CredentialRequests<Extract<ClientMessage, { type: "SetAuth" }>, AuthWaiter> {
  constructor() {
    super((token) => ({ type: "SetAuth", token }));
  }
}
