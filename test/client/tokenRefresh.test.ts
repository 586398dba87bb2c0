/**
 * Scenario: `client.setAuth(fetchToken)` over a fake socket and hand-fired timers. The
 * client asks the fetcher for a first (maybe cached) token, replaces it at once with a
 * fresh one, then fetches again with forceRefresh shortly before each token's lifetime
 * ends; when the server says the token expired, or refuses it (first, or when re-sent
 * after a reconnect), it fetches a fresh one once and gives up (reported) if that is
 * refused too. Fetcher failures reject the first call or reach onError; a later setAuth
 * or close stops the refreshing.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { CairnClient } from "../../src/client/CairnClient.js";
import type { Random } from "../../src/client/Random.js";
import { refreshDelayMs } from "../../src/client/TokenRefresher.js";
import { tokenLifetimeMs } from "../../src/client/tokenLifetime.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { TIMER_DELAY_MAX_MS, TOKEN_REFRESH_DELAY_MIN_MS, TOKEN_REFRESH_MARGIN_MS } from "../../src/client/limits.js";
import { SeededRandom } from "../../src/base/random.js";
import type { ClientMessage } from "../../src/sync/protocol.js";
import { FakeSocket, ManualTimers } from "./fakeSocket.js";
import { outcomeOf } from "./stateHarness.js";

const HOUR_S = 3600;
const ISSUED_AT_S = 1_700_000_000;

/** A JWT-shaped token (the client reads its payload, never its signature). */
function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "ES256", typ: "JWT" })}.${part(claims)}.c2lnbmF0dXJl`;
}

function tokenNumber(n: number, lifetimeS = HOUR_S): string {
  return jwt({ sub: "user-1", n, iat: ISSUED_AT_S + n, exp: ISSUED_AT_S + n + lifetimeS });
}

/** A fetcher that hands out token 1, 2, 3 … and records how it was asked. */
function countingFetcher(lifetimeS = HOUR_S) {
  const calls: { forceRefresh: boolean }[] = [];
  const fetchToken = async (options: { forceRefresh: boolean }) => {
    calls.push({ ...options });
    return tokenNumber(calls.length, lifetimeS);
  };
  return { calls, fetchToken };
}

function newClient() {
  const errors: unknown[] = [];
  const timers = new ManualTimers();
  const seeded = new SeededRandom(3);
  const random: Random = { bytes: (length) => seeded.bytes(length), float: () => 0 };
  const client = new CairnClient("ws://cairn.test/sync", { WebSocket: FakeSocket as WebSocketConstructor, timers, random, onError: (error) => errors.push(error) });
  const socket = FakeSocket.latest();
  socket.accept();
  return { client, timers, errors, socket };
}

/** Lets the fetcher's promise and the client's reaction to it run. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 10; turn++) await Promise.resolve();
}

const setAuths = (frames: readonly ClientMessage[]) => frames.filter((frame) => frame.type === "SetAuth").map((frame) => (frame as { token: string | null }).token);
const unauthenticated = { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "token refused" } as const;

beforeEach(() => {
  FakeSocket.created = [];
});

describe("setAuth with a token fetcher", () => {
  it("sends the first token, replaces it with a fresh one at once, then refreshes before each one's lifetime ends", async () => {
    const { client, timers, socket, errors } = newClient();
    const { calls, fetchToken } = countingFetcher();
    const subject = client.setAuth(fetchToken);
    await settle();
    expect(calls).toEqual([{ forceRefresh: false }]);
    expect(setAuths(socket.sent)).toEqual([tokenNumber(1)]);
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    expect(await outcomeOf(subject)).toEqual({ state: "resolved", value: "user-1" });
    // The first token may have come from the provider's cache: how long it has left is unknown.
    expect(timers.delays()).toEqual([0]);
    timers.fireAll();
    await settle();
    expect(calls).toEqual([{ forceRefresh: false }, { forceRefresh: true }]);
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    expect(timers.delays()).toEqual([HOUR_S * 1000 - TOKEN_REFRESH_MARGIN_MS]);
    // Before the second token expires, the third replaces it; and so on.
    timers.fireAll();
    await settle();
    expect(calls.at(-1)).toEqual({ forceRefresh: true });
    expect(setAuths(socket.sent)).toEqual([tokenNumber(1), tokenNumber(2), tokenNumber(3)]);
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    expect(timers.delays()).toEqual([HOUR_S * 1000 - TOKEN_REFRESH_MARGIN_MS]);
    expect(errors).toEqual([]);
    client.close();
    expect(timers.pending.size).toBe(0);
  });

  it("fetches a fresh token once when the server says the token expired", async () => {
    const { client, timers, socket, errors } = newClient();
    const { calls, fetchToken } = countingFetcher();
    const subject = client.setAuth(fetchToken);
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await outcomeOf(subject);
    socket.deliver({ type: "AuthExpired", error: { ...unauthenticated, message: "the session's token expired" } });
    await settle();
    expect(calls).toEqual([{ forceRefresh: false }, { forceRefresh: true }]);
    expect(timers.delays()).toEqual([]); // the pending refresh gave way to this one
    expect(setAuths(socket.sent)).toEqual([tokenNumber(1), tokenNumber(2)]);
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    expect(timers.delays()).toEqual([HOUR_S * 1000 - TOKEN_REFRESH_MARGIN_MS]);
    expect(errors).toEqual([]);
    client.close();
  });

  it("replaces a refused first token once, and rejects if the fresh one is refused too", async () => {
    const { client, timers, socket } = newClient();
    const { calls, fetchToken } = countingFetcher();
    const subject = client.setAuth(fetchToken);
    await settle();
    socket.deliver({ type: "AuthResponse", success: false, subject: null, error: unauthenticated });
    await settle();
    expect(calls).toEqual([{ forceRefresh: false }, { forceRefresh: true }]);
    expect(await outcomeOf(subject)).toEqual({ state: "pending" });
    socket.deliver({ type: "AuthResponse", success: false, subject: null, error: unauthenticated });
    expect(await outcomeOf(subject)).toMatchObject({ state: "rejected", error: { code: "UNAUTHENTICATED" } });
    await settle();
    expect(calls).toHaveLength(2);
    expect(timers.delays()).toEqual([]);
    client.close();
  });

  it("resolves with the fresh token's subject when only the first was refused", async () => {
    const { client, socket } = newClient();
    const { fetchToken } = countingFetcher();
    const subject = client.setAuth(fetchToken);
    await settle();
    socket.deliver({ type: "AuthResponse", success: false, subject: null, error: unauthenticated });
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    expect(await outcomeOf(subject)).toEqual({ state: "resolved", value: "user-1" });
    client.close();
  });

  it("re-sends the token after a reconnect, and fetches a fresh one once if the server refuses it there", async () => {
    const { client, timers, socket, errors } = newClient();
    const { calls, fetchToken } = countingFetcher();
    void client.setAuth(fetchToken);
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    timers.fireAll(); // the immediate forced refresh
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    socket.dropByServer();
    expect(timers.pending.size).toBe(2); // the reconnect and the token refresh
    const reconnect = [...timers.pending.entries()].find(([, timer]) => timer.delayMs !== HOUR_S * 1000 - TOKEN_REFRESH_MARGIN_MS)!;
    timers.pending.delete(reconnect[0]);
    reconnect[1].callback();
    const second = FakeSocket.latest();
    second.accept();
    expect(setAuths(second.sent)).toEqual([tokenNumber(2)]);
    // It expired while the client was away.
    second.deliver({ type: "AuthResponse", success: false, subject: null, error: unauthenticated });
    await settle();
    expect(calls.map((call) => call.forceRefresh)).toEqual([false, true, true]);
    expect(setAuths(second.sent)).toEqual([tokenNumber(2), tokenNumber(3)]);
    second.deliver({ type: "AuthResponse", success: false, subject: null, error: unauthenticated });
    await settle();
    // Refused again: given up, reported, and anonymous from here on.
    expect(calls).toHaveLength(3);
    expect(errors).toMatchObject([{ code: "UNAUTHENTICATED" }]);
    expect(timers.pending.size).toBe(0);
    client.close();
  });

  it("rejects the first call when the fetcher fails, and reports a failed refresh", async () => {
    const { client, timers, socket, errors } = newClient();
    const failing = client.setAuth(async () => {
      throw new Error("provider unreachable");
    });
    expect(await outcomeOf(failing)).toMatchObject({ state: "rejected", error: { message: "provider unreachable" } });
    const wrong = client.setAuth((async () => 42) as never);
    expect(await outcomeOf(wrong)).toMatchObject({ state: "rejected", error: { code: "INVALID_ARGUMENT" } });
    expect(setAuths(socket.sent)).toEqual([]);

    let fail = false;
    let count = 0;
    void client.setAuth(async () => {
      if (fail) throw new Error("refresh failed");
      return tokenNumber(++count);
    });
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    fail = true;
    timers.fireAll();
    await settle();
    expect(errors).toMatchObject([{ message: "refresh failed" }]);
    expect(timers.pending.size).toBe(0);
    // The token in use still lapses at the server, which asks again.
    fail = false;
    socket.deliver({ type: "AuthExpired", error: unauthenticated });
    await settle();
    expect(setAuths(socket.sent)).toEqual([tokenNumber(1), tokenNumber(2)]);
    client.close();
  });

  it("signs out when the fetcher yields null, and stops when setAuth is called again or the client closes", async () => {
    const { client, timers, socket, errors } = newClient();
    const signedOut = client.setAuth(async () => null);
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: null });
    expect(await outcomeOf(signedOut)).toEqual({ state: "resolved", value: null });
    expect(timers.pending.size).toBe(0);

    const { calls, fetchToken } = countingFetcher();
    void client.setAuth(fetchToken);
    await settle();
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-1" });
    await settle();
    expect(timers.pending.size).toBe(1);
    const fixed = client.setAuth("a-fixed-token");
    expect(timers.pending.size).toBe(0);
    socket.deliver({ type: "AuthResponse", success: true, subject: "user-9" });
    expect(await outcomeOf(fixed)).toEqual({ state: "resolved", value: "user-9" });
    // With a fixed token, an expiry is reported, as before fetchers existed; nothing is fetched.
    socket.deliver({ type: "AuthExpired", error: unauthenticated });
    await settle();
    expect(calls).toHaveLength(1);
    expect(errors).toMatchObject([{ code: "UNAUTHENTICATED" }]);

    // A fetch still running when the client closes sends nothing.
    let release: (token: string) => void = () => undefined;
    const late = client.setAuth(() => new Promise<string>((resolve) => (release = resolve)));
    client.close();
    release(tokenNumber(7));
    expect(await outcomeOf(late)).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST" } });
    expect(setAuths(socket.sent)).not.toContain(tokenNumber(7));
  });
});

describe("a token's lifetime", () => {
  it("is exp − iat of a JWT's payload, read without Buffer; null for anything else", () => {
    expect(tokenLifetimeMs(jwt({ iat: 100, exp: 160 }))).toBe(60_000);
    // Claims in UTF-8, and payload bytes that base64url spells with - and _.
    expect(tokenLifetimeMs(jwt({ name: "Zoë ✓ 𝄞", blob: "\u00fb\u00ff\u00fe?>", iat: 0, exp: 1 }))).toBe(1000);
    for (const token of ["opaque-token", "a.b", jwt({ exp: 160 }), jwt({ iat: 100 }), jwt({ iat: 100, exp: 100 }), jwt({ iat: "1", exp: "2" }), "a.!!!.c", "a.bm90IGpzb24.c", "a..c"]) {
      expect(tokenLifetimeMs(token), token).toBeNull();
    }
  });

  it("sets the refresh a margin before its end, at half of a short one, within the timer's range", () => {
    expect(refreshDelayMs(HOUR_S * 1000)).toBe(HOUR_S * 1000 - TOKEN_REFRESH_MARGIN_MS);
    expect(refreshDelayMs(40_000)).toBe(20_000);
    expect(refreshDelayMs(10)).toBe(TOKEN_REFRESH_DELAY_MIN_MS);
    expect(refreshDelayMs(365 * 24 * HOUR_S * 1000)).toBe(TIMER_DELAY_MAX_MS);
  });
});
