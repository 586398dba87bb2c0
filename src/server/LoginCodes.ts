import { randomHex, type Clock, type Random, LOGIN_CODE_TTL_MS, LOGIN_CODES_MAX } from "../base/index.js";
import { sameSecret } from "../sync/index.js";


/**
 * One-time login codes for the dashboard (`cairn dev` prints `/_dashboard#login=<code>`):
 * a code is exchanged once for the admin key (POST /api/admin/login), so the key itself
 * never appears in a URL, a terminal's scrollback or a browser's history. A code is spent
 * on its first use, lapses after LOGIN_CODE_TTL_MS, and is compared in constant time.
 */
export class LoginCodes {
  private codes: { readonly code: string; readonly expiresAtMs: number }[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly random: Random,
  ) {}

  issue(): string {
    const code = randomHex(this.random, 16);
    this.codes = [...this.codes.slice(-(LOGIN_CODES_MAX - 1)), { code, expiresAtMs: this.clock.monotonicMs() + LOGIN_CODE_TTL_MS }];
    return code;
  }

  /** Whether `code` is outstanding; if so it is spent. */
  redeem(code: string): boolean {
    const nowMs = this.clock.monotonicMs();
    this.codes = this.codes.filter((entry) => entry.expiresAtMs > nowMs);
    const found = this.codes.find((entry) => sameSecret(code, entry.code));
    if (found === undefined) return false;
    this.codes = this.codes.filter((entry) => entry !== found);
    return true;
  }
}
