/**
 * A credential the session runs with (a token, an admin key) and the calls waiting for
 * the server's answers to it. Answers name no request, so they pair with the frames in
 * the order they were sent (every answer answers one frame).
 *
 * Invariants:
 * - `credential` is the latest one set and not refused; it is sent again after every
 *   ConnectAck, so each connection runs with it. A refused one leaves the server's
 *   session without it, so the client forgets it too rather than re-send it forever;
 * - every waiting call is either in `unsent` (no connection) or in exactly one group of
 *   `onTheWire` (one group per frame sent, oldest first);
 * - calls made while disconnected are answered by the one frame of the current
 *   credential sent after the next ConnectAck: a credential set meanwhile supersedes theirs.
 */
export class CredentialRequests<Frame, Waiter> {
  private current: string | null = null;
  private unsent: Waiter[] = [];
  private onTheWire: { readonly credential: string | null; readonly waiters: Waiter[] }[] = [];

  constructor(private readonly frameOf: (credential: string | null) => Frame) {}

  get credential(): string | null {
    return this.current;
  }

  /** Whether every frame sent on this connection was answered: the server's session runs with `credential`. */
  get settled(): boolean {
    return this.onTheWire.length === 0;
  }

  /** Sets the credential (null: none); returns the frame to send when connected. */
  set(credential: string | null, waiter: Waiter, connected: boolean): Frame | null {
    this.current = credential;
    if (!connected) {
      this.unsent.push(waiter);
      return null;
    }
    this.onTheWire.push({ credential, waiters: [waiter] });
    return this.frameOf(credential);
  }

  /** The calls an answer answers: those of the oldest frame on the wire. A refusal forgets the credential it refused. */
  answered(success: boolean): Waiter[] {
    const sent = this.onTheWire.shift();
    if (!success && (sent === undefined || sent.credential === this.current)) this.current = null;
    return sent?.waiters ?? [];
  }

  /** The server dropped the credential (a token expired): forget it (waiting calls keep waiting for their answers). */
  forget(): void {
    this.current = null;
  }

  /** Frames in flight are lost with the connection; their calls wait for the next one. */
  connectionLost(): void {
    this.unsent = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
  }

  /**
   * After a ConnectAck: the frame to send (null without a credential, which a fresh
   * session already lacks) and the calls answered without one (they asked for none).
   */
  resend(): { frame: Frame | null; answeredWithout: Waiter[] } {
    const waiting = this.unsent;
    this.unsent = [];
    if (this.current === null) return { frame: null, answeredWithout: waiting };
    this.onTheWire.push({ credential: this.current, waiters: waiting });
    return { frame: this.frameOf(this.current), answeredWithout: [] };
  }

  takeAll(): Waiter[] {
    const all = [...this.onTheWire.flatMap((sent) => sent.waiters), ...this.unsent];
    this.onTheWire = [];
    this.unsent = [];
    return all;
  }
}
