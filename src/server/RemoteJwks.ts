import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { CairnError, systemClock, type Clock } from "../base/index.js";

/**
 * The identity provider's public keys, fetched from its JWKS URL (`--jwks-url`) and
 * cached, so that a provider rotating its signing key needs no restart of Cairn.
 *
 * Invariants:
 * - at most one fetch is in flight; every token that needs one waits for that one;
 * - a fetch asked for by a token (its `kid` is unknown, or no keys have arrived yet)
 *   starts at most once per `unknownKidCooldownMs`: a flood of tokens naming random kids
 *   costs the provider one request per cooldown, not one per token. Tokens in between are
 *   refused at once (UNAUTHENTICATED) without waiting;
 * - a failed fetch (unreachable, timed out, not 2xx, over `documentBytesMax`, not a key
 *   set with at least one key) changes nothing: the cached keys keep verifying. The
 *   first failure of a streak logs one warning; the first success after it logs one line;
 * - keys older than their refresh interval (the response's Cache-Control max-age within
 *   [JWKS_REFRESH_INTERVAL_MIN_MS, JWKS_REFRESH_INTERVAL_MAX_MS], else
 *   `refreshIntervalMs`) are re-fetched in the background when a token is verified, no
 *   sooner than a cooldown after the last fetch (so a provider that is down is asked once
 *   per cooldown, not once per token): a token never waits for a periodic refresh, and a
 *   quiet node makes no requests;
 * - time comes only from the injected Clock (the cooldown, the age and the fetch timeout).
 *
 * When the first fetch fails, the node starts anyway (see `start`).
 */

/** Longest wait for the provider's answer, body included. Providers answer in well under a second; a token naming an unknown kid waits at most this long. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** Largest key-set document read. A real one (a few RSA-4096 keys) is 2–10 KB; 256 KiB leaves room and bounds what a broken or hostile URL can make the node buffer. */
export const JWKS_DOCUMENT_BYTES_MAX = 256 * 1024;
/** Least time between two fetches that tokens ask for: at most 2 requests a minute per node however many unknown kids arrive, while a key the provider just rotated in is picked up within 30 s. */
export const JWKS_UNKNOWN_KID_COOLDOWN_MS = 30_000;
/** Age after which the keys are re-fetched, when the response gives no max-age: 10 minutes is 6 requests an hour per node, and a removed (revoked) key stops verifying within 10 minutes of use. */
export const JWKS_REFRESH_INTERVAL_MS = 10 * 60_000;
/** Bounds on a response's Cache-Control max-age: below a minute would make a busy node poll the provider; above a day would keep a revoked key too long. */
export const JWKS_REFRESH_INTERVAL_MIN_MS = 60_000;
export const JWKS_REFRESH_INTERVAL_MAX_MS = 24 * 60 * 60_000;

export interface RemoteJwksOptions {
  /** The provider's JWKS endpoint: https, or http to a loopback address only. */
  readonly url: string;
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Where warnings and recoveries go, one line each. Default: standard error. */
  readonly log?: (line: string) => void;
  readonly fetchTimeoutMs?: number;
  readonly documentBytesMax?: number;
  readonly unknownKidCooldownMs?: number;
  readonly refreshIntervalMs?: number;
}

/** The keys held and when they arrived. */
interface CachedKeys {
  readonly getKey: JWTVerifyGetKey;
  readonly count: number;
  readonly fetchedAtMs: number;
  readonly refreshAfterMs: number;
}

export class RemoteJwks {
  readonly url: string;
  private readonly options: RemoteJwksOptions;
  private readonly clock: Clock;
  private readonly log: (line: string) => void;
  private cached: CachedKeys | null = null;
  private inFlight: Promise<void> | null = null;
  private lastFetchStartedAtMs: number | null = null;
  /** The reason of the failure streak in progress (null: the last fetch succeeded, or none failed yet). */
  private failure: string | null = null;
  private fetchCount = 0;

  /** INVALID_ARGUMENT for a URL that is not https (or http to a loopback address). */
  constructor(options: RemoteJwksOptions) {
    this.url = checkJwksUrl(options.url);
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? ((line) => process.stderr.write(`cairn: ${line}\n`));
  }

  /**
   * The first fetch. A node whose provider is down still starts (logging a warning) and
   * refuses tokens until the keys arrive — fetched again when a token asks, once per
   * cooldown. Failing the start instead would make the database's availability hang on
   * the identity provider's: a writer restarted during a provider outage would hold no
   * lease, and anonymous clients, admin calls and replicas would all stop with it.
   * Returns whether keys are held.
   */
  async start(): Promise<boolean> {
    await this.fetchNow();
    return this.cached !== null;
  }

  /** Resolves once no fetch is in flight (a background refresh included), for an orderly stop and for tests. */
  async idle(): Promise<void> {
    while (this.inFlight !== null) await this.inFlight;
  }

  /** Fetches started so far (for logs and tests). */
  get fetches(): number {
    return this.fetchCount;
  }

  /** The key getter `jwtVerify` calls: the cached keys, re-fetched once for a kid they lack. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    this.refreshIfStale();
    if (this.cached === null) {
      await this.fetchIfCooledDown();
      if (this.cached === null) throw new CairnError("UNAUTHENTICATED", `no keys from ${this.url} yet${this.failure !== null ? ` (${this.failure})` : ""}`);
    }
    const held = this.cached;
    try {
      return await held.getKey(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      await this.fetchIfCooledDown();
      if (this.cached === held) throw error;
      return await this.cached.getKey(header, token);
    }
  };

  /** Starts a background fetch when the keys are due for one (and the last fetch, maybe a failed one, is a cooldown old). */
  private refreshIfStale(): void {
    const cached = this.cached;
    if (cached === null || this.inFlight !== null || !this.cooledDown()) return;
    if (this.clock.monotonicMs() - cached.fetchedAtMs < cached.refreshAfterMs) return;
    // In the background: a token never waits for a periodic refresh. fetchNow logs its failures.
    void this.fetchNow();
  }

  /** Waits for the fetch in flight, or starts one unless the last one started within the cooldown. */
  private async fetchIfCooledDown(): Promise<void> {
    if (this.inFlight !== null) return this.inFlight;
    if (this.cooledDown()) return this.fetchNow();
  }

  private cooledDown(): boolean {
    const last = this.lastFetchStartedAtMs;
    return last === null || this.clock.monotonicMs() - last >= (this.options.unknownKidCooldownMs ?? JWKS_UNKNOWN_KID_COOLDOWN_MS);
  }

  private fetchNow(): Promise<void> {
    if (this.inFlight !== null) return this.inFlight;
    this.lastFetchStartedAtMs = this.clock.monotonicMs();
    this.fetchCount++;
    this.inFlight = this.fetchKeys()
      .then((keys) => this.keysArrived(keys), (error: unknown) => this.fetchFailed(error))
      .finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private keysArrived(keys: CachedKeys): void {
    this.cached = keys;
    if (this.failure !== null) this.log(`the JWKS at ${this.url} answers again (${keys.count} key(s))`);
    this.failure = null;
  }

  private fetchFailed(error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    if (this.failure === null) {
      const held = this.cached === null ? "tokens are refused until it answers" : `keeping the ${this.cached.count} cached key(s)`;
      this.log(`warning: cannot fetch the JWKS at ${this.url}: ${reason}; ${held}`);
    }
    this.failure = reason;
  }

  /** One GET, bounded in time and size, parsed into a key set. Rejects with the reason. */
  private async fetchKeys(): Promise<CachedKeys> {
    const clock = this.clock;
    const timeoutMs = this.options.fetchTimeoutMs ?? JWKS_FETCH_TIMEOUT_MS;
    const abort = new AbortController();
    const timer = clock.setTimer(timeoutMs, () => abort.abort(new Error(`no complete answer within ${timeoutMs} ms`)));
    try {
      const response = await fetch(this.url, { signal: abort.signal, headers: { accept: "application/json" }, redirect: "error" });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`HTTP ${response.status}`);
      }
      const text = await readBounded(response, this.options.documentBytesMax ?? JWKS_DOCUMENT_BYTES_MAX);
      const set = parseKeySet(text);
      return { getKey: createLocalJWKSet(set), count: set.keys.length, fetchedAtMs: clock.monotonicMs(), refreshAfterMs: this.refreshAfterMs(response.headers.get("cache-control")) };
    } catch (error) {
      // An abort rejects with the signal's reason; fetch wraps network failures in a TypeError whose cause says more.
      if (abort.signal.aborted) throw abort.signal.reason;
      const cause = (error as { cause?: unknown }).cause;
      throw cause instanceof Error ? new Error(`${(error as Error).message}: ${cause.message}`) : error;
    } finally {
      timer.cancel();
    }
  }

  private refreshAfterMs(cacheControl: string | null): number {
    const maxAge = /(?:^|,)\s*max-age\s*=\s*(\d+)/i.exec(cacheControl ?? "")?.[1];
    if (maxAge === undefined) return this.options.refreshIntervalMs ?? JWKS_REFRESH_INTERVAL_MS;
    return Math.min(JWKS_REFRESH_INTERVAL_MAX_MS, Math.max(JWKS_REFRESH_INTERVAL_MIN_MS, Number(maxAge) * 1000));
  }
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * The URL, if Cairn may fetch keys from it. Plain http only to this machine: whoever can
 * change the key set in transit can sign tokens for any user.
 */
function checkJwksUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CairnError("INVALID_ARGUMENT", `--jwks-url must be a URL, not ${JSON.stringify(url)}`);
  }
  if (parsed.protocol === "https:" || (parsed.protocol === "http:" && LOOPBACK_HOSTS.has(parsed.hostname))) return parsed.href;
  throw new CairnError(
    "INVALID_ARGUMENT",
    `--jwks-url must be https (http only to localhost): whoever can alter the key set in transit can sign tokens for any user; not ${JSON.stringify(url)}`,
  );
}

/** The body as text, refusing one over `bytesMax` (announced or actual) without buffering more. */
async function readBounded(response: Response, bytesMax: number): Promise<string> {
  const announced = Number(response.headers.get("content-length") ?? NaN);
  if (announced > bytesMax) throw new Error(`the document is ${announced} bytes, over the ${bytesMax}-byte limit`);
  if (response.body === null) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > bytesMax) {
      await reader.cancel();
      throw new Error(`the document is over the ${bytesMax}-byte limit`);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** A JSON Web Key Set with at least one key; an empty set is taken for a broken answer, not for "revoke every key". */
function parseKeySet(text: string): JSONWebKeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error("the document is not JSON");
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((key) => typeof key === "object" && key !== null && !Array.isArray(key) && typeof (key as { kty?: unknown }).kty === "string")) {
    throw new Error('the document is not a key set ({"keys": [ ... ]} with at least one key)');
  }
  return parsed as JSONWebKeySet;
}
