import type { ClientMessage } from "../sync/protocol.js";
import { CredentialRequests } from "./CredentialRequests.js";

/** A `setAdminKey` call waiting for its AdminAuthResponse. */
export interface AdminKeyWaiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The admin key (null: none) and the `setAdminKey` calls waiting for their
 * AdminAuthResponse (CredentialRequests' rules). ClientState sends it after the token and
 * before the query set on every connection, so that an admin's subscriptions to system
 * functions run as an admin's from the first Transition.
 */
export class AdminKeyRequests extends CredentialRequests<Extract<ClientMessage, { type: "AdminAuth" }>, AdminKeyWaiter> {
  constructor() {
    super((key) => ({ type: "AdminAuth", key }));
  }
}
