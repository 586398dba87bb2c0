import type { ClientMessage } from "../sync/protocol.js";

/**
 * The auth token and the `setAuth` calls waiting for their AuthResponse. AuthResponse
 * names no request, so answers pair with SetAuth frames in the order they were sent
 * (every AuthResponse answers one SetAuth; an expiry comes as AuthExpired).
 *
 * Invariants:
 * - `token` is the latest one set and not refused; it is sent again after every
 *   ConnectAck, so each connection runs with it. A refused token leaves the server's
 *   session anonymous, so the client forgets it too rather than re-send it forever;
 * - every waiting call is either in `unsent` (no connection) or in exactly one group of
 *   `onTheWire` (one group per SetAuth frame sent, oldest first);
 * - calls made while disconnected are answered by the one SetAuth of the current token
 *   sent after the next ConnectAck: a token set meanwhile supersedes theirs.
 */

export interface AuthWaiter {
  /** With the verified subject (null: anonymous). */
  readonly resolve: (subject: string | null) => void;
  readonly reject: (error: unknown) => void;
}

type SetAuthFrame = Extract<ClientMessage, { type: "SetAuth" }>;

/** One SetAuth frame on the wire and the calls its AuthResponse answers. */
interface SentToken {
  readonly token: string | null;
  readonly waiters: AuthWaiter[];
}

export class AuthRequests {
  private current: string | null = null;
  private unsent: AuthWaiter[] = [];
  private onTheWire: SentToken[] = [];

  get token(): string | null {
    return this.current;
  }

  /** Whether every SetAuth sent on this connection was answered: the server's session runs with `token` (null: anonymous). */
  get settled(): boolean {
    return this.onTheWire.length === 0;
  }

  /** Sets the token; returns the frame to send when connected. */
  set(token: string | null, waiter: AuthWaiter, connected: boolean): SetAuthFrame | null {
    this.current = token;
    if (!connected) {
      this.unsent.push(waiter);
      return null;
    }
    this.onTheWire.push({ token, waiters: [waiter] });
    return { type: "SetAuth", token };
  }

  /**
   * The calls an AuthResponse answers: those of the oldest SetAuth on the wire. A
   * refusal forgets the token it refused.
   */
  answered(success: boolean): AuthWaiter[] {
    const sent = this.onTheWire.shift();
    if (!success && (sent === undefined || sent.token === this.current)) this.current = null;
    return sent?.waiters ?? [];
  }

  /** The server says the current token expired: forget it (waiting calls keep waiting for their answers). */
  expired(): void {
    this.current = null;
  }

  /** Frames in flight are lost with the connection; their calls wait for the next one. */
  connectionLost(): void {
    this.unsent = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
  }

  /**
   * After a ConnectAck: the SetAuth to send (null when anonymous, which a fresh
   * connection already is) and the calls answered without one (they asked for anonymous).
   */
  resend(): { frame: SetAuthFrame | null; anonymous: AuthWaiter[] } {
    const waiting = this.unsent;
    this.unsent = [];
    if (this.current === null) return { frame: null, anonymous: waiting };
    this.onTheWire.push({ token: this.current, waiters: waiting });
    return { frame: { type: "SetAuth", token: this.current }, anonymous: [] };
  }

  takeAll(): AuthWaiter[] {
    const all = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
    this.unsent = [];
    return all;
  }
}
