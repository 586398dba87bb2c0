import { CairnError, invalidArgument } from "../base/index.js";
import { TIMER_DELAY_MAX_MS, TOKEN_REFRESH_DELAY_MIN_MS, TOKEN_REFRESH_MARGIN_MS } from "./limits.js";
import type { Timers } from "./Timers.js";
import { tokenLifetimeMs } from "./tokenLifetime.js";

/**
 * Asks the app for a token (its auth provider's SDK). `forceRefresh: false` may return a
 * cached token; `forceRefresh: true` must return a newly issued one (the client asks so
 * when a token is about to expire or was refused). Null: sign out (anonymous).
 */
export type TokenFetcher = (options: { readonly forceRefresh: boolean }) => Promise<string | null>;

export interface TokenRefresherOptions {
  readonly fetchToken: TokenFetcher;
  readonly timers: Timers;
  /** Sends SetAuth with the token; resolves with the verified subject, rejects when the server refuses it. */
  readonly sendToken: (token: string | null) => Promise<string | null>;
  /** Failures of a refresh nobody awaits (the first token's failures reject `start` instead). */
  readonly report: (error: unknown) => void;
}

/**
 * Keeps a session authenticated with tokens from a fetcher (`client.setAuth(fetchToken)`).
 *
 *   event                                   then
 *   start                                   fetch (cached allowed), send
 *   token accepted, fetched cached          fetch at once with forceRefresh (its age is unknown)
 *   token accepted, fetched forced          fetch with forceRefresh TOKEN_REFRESH_MARGIN_MS before
 *                                           its lifetime (`exp` − `iat`) ends; no timer without them
 *   token refused, or lost (AuthExpired,    fetch with forceRefresh and send, once: a fresh token
 *     refused when re-sent after reconnect)   refused too is reported, and the session stays anonymous
 *   fetcher resolves null                   anonymous, no timer
 *   fetcher fails                           `start` rejects / reported; a lost token is fetched again
 *   stop (another setAuth, close)           timer cancelled; answers of fetches still running ignored
 *
 * Invariants:
 * - at most one refresh timer is pending, and none once stopped;
 * - only the latest renewal may send a token: an older one's fetch result is dropped.
 */
export class TokenRefresher {
  private readonly options: TokenRefresherOptions;
  private timer: unknown = null;
  private generation = 0;
  private stopped = false;
  /** The latest renewal, which an outdated one hands its caller to. */
  private latest: Promise<string | null> = Promise.resolve(null);

  constructor(options: TokenRefresherOptions) {
    this.options = options;
  }

  /** The first token; resolves with its verified subject (null: anonymous). */
  start(): Promise<string | null> {
    return this.renew(false, false);
  }

  /** The session's token expired, or was refused when re-sent: a fresh one replaces it. */
  tokenLost(): void {
    if (this.stopped) return;
    this.renew(true, true).catch((error: unknown) => this.options.report(error));
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    this.cancelTimer();
  }

  /**
   * Fetches a token and sends it. `afterRefusal`: this renewal replaces a refused or lost
   * token, so its own refusal is final.
   */
  private renew(forceRefresh: boolean, afterRefusal: boolean): Promise<string | null> {
    this.cancelTimer();
    const generation = ++this.generation;
    this.latest = this.fetchAndSend(generation, forceRefresh, afterRefusal);
    return this.latest;
  }

  private async fetchAndSend(generation: number, forceRefresh: boolean, afterRefusal: boolean): Promise<string | null> {
    const token = await this.fetch(forceRefresh);
    if (generation !== this.generation) return this.outdated();
    let subject: string | null;
    try {
      subject = await this.options.sendToken(token);
    } catch (error) {
      if (generation !== this.generation || !refused(error) || afterRefusal) throw error;
      return this.renew(true, true);
    }
    if (generation === this.generation && token !== null) this.schedule(token, forceRefresh);
    return subject;
  }

  private async fetch(forceRefresh: boolean): Promise<string | null> {
    const token: unknown = await this.options.fetchToken({ forceRefresh });
    if (token !== null && typeof token !== "string") throw invalidArgument(`fetchToken must resolve with a token string or null, not ${typeof token}`);
    return token;
  }

  /** What a renewal replaced by a later one (or by stop) resolves with. */
  private outdated(): Promise<string | null> {
    if (this.stopped) return Promise.reject(new CairnError("CONNECTION_LOST", "setAuth was called again, or the client was closed, before the token arrived"));
    return this.latest;
  }

  private schedule(token: string, fresh: boolean): void {
    const lifetimeMs = tokenLifetimeMs(token);
    if (lifetimeMs === null) return;
    const delayMs = fresh ? refreshDelayMs(lifetimeMs) : 0;
    this.timer = this.options.timers.setTimeout(() => {
      this.timer = null;
      if (!this.stopped) this.renew(true, false).catch((error: unknown) => this.options.report(error));
    }, delayMs);
  }

  private cancelTimer(): void {
    if (this.timer !== null) this.options.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}

/** When to replace a token of this lifetime, counted from its arrival (see the limits). */
export function refreshDelayMs(lifetimeMs: number): number {
  return Math.min(TIMER_DELAY_MAX_MS, Math.max(TOKEN_REFRESH_DELAY_MIN_MS, lifetimeMs - TOKEN_REFRESH_MARGIN_MS, lifetimeMs / 2));
}

function refused(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "UNAUTHENTICATED";
}
