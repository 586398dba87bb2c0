import type { ClientMessage } from "../sync/protocol.js";

/**
 * The admin key and the `setAdminKey` calls waiting for their AdminAuthResponse, which
 * pair with AdminAuth frames in the order they were sent (as AuthRequests does for tokens).
 *
 * Invariants:
 * - `key` is the latest one set and not refused; it is sent again on every connection,
 *   before the query set, so an admin's subscriptions to system functions run as an
 *   admin's from the first Transition. A refused key is forgotten (never re-sent).
 * - every waiting call is in `unsent` (no connection) or in exactly one group of
 *   `onTheWire` (one per AdminAuth frame sent, oldest first).
 */
export interface AdminKeyWaiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

type AdminAuthFrame = Extract<ClientMessage, { type: "AdminAuth" }>;

export class AdminKeyRequests {
  private current: string | null = null;
  private unsent: AdminKeyWaiter[] = [];
  private onTheWire: { readonly key: string | null; readonly waiters: AdminKeyWaiter[] }[] = [];

  /** Sets the key (null: no longer an admin); returns the frame to send when connected. */
  set(key: string | null, waiter: AdminKeyWaiter, connected: boolean): AdminAuthFrame | null {
    this.current = key;
    if (!connected) {
      this.unsent.push(waiter);
      return null;
    }
    this.onTheWire.push({ key, waiters: [waiter] });
    return { type: "AdminAuth", key };
  }

  /** The calls an AdminAuthResponse answers; a refusal forgets the key it refused. */
  answered(success: boolean): AdminKeyWaiter[] {
    const sent = this.onTheWire.shift();
    if (!success && (sent === undefined || sent.key === this.current)) this.current = null;
    return sent?.waiters ?? [];
  }

  connectionLost(): void {
    this.unsent = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
  }

  /** After a ConnectAck: the AdminAuth to send (null when no key: a fresh session is no admin's) and the calls answered without one. */
  resend(): { frame: AdminAuthFrame | null; answered: AdminKeyWaiter[] } {
    const waiting = this.unsent;
    this.unsent = [];
    if (this.current === null) return { frame: null, answered: waiting };
    this.onTheWire.push({ key: this.current, waiters: waiting });
    return { frame: { type: "AdminAuth", key: this.current }, answered: [] };
  }

  takeAll(): AdminKeyWaiter[] {
    const all = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
    this.unsent = [];
    return all;
  }
}
