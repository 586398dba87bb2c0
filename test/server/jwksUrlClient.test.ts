/**
 * Scenario: the whole path with real parts. A local identity provider (node:http) serves
 * its JWKS; a writer node verifies tokens against that URL; the real client (over `ws`)
 * gets its tokens from a fetcher that signs them with the provider's current key. The
 * provider rotates its key: the client's next refresh brings a token naming the new kid,
 * the node fetches the key set once for it, and `ctx.auth` in a live query moves to the
 * new identity. A fetcher that signs with a key the provider never published is refused,
 * retried once with forceRefresh, then reported, and the session stays anonymous.
 * Time: the node's key set on a ManualClock, the client's refresh on hand-fired timers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import { JWKS_UNKNOWN_KID_COOLDOWN_MS, RemoteJwks } from "../../src/server/RemoteJwks.js";
import type { functions } from "../sync/syncApp.js";
import { ManualTimers } from "../client/fakeSocket.js";
import { eventually } from "../support/Gate.js";
import { JwksServer, signingKey, tokenFor, type SigningKey } from "./jwksProvider.js";
import { startTestNode } from "./serverHarness.js";

const api = apiOf<typeof functions>();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function deployment(keys: readonly SigningKey[]) {
  const provider = new JwksServer();
  provider.serveKeys(keys);
  await provider.listen();
  cleanups.push(() => provider.stop());
  const clock = new ManualClock();
  const log: string[] = [];
  const remoteJwks = new RemoteJwks({ url: provider.url, clock, log: (line) => log.push(line) });
  expect(await remoteJwks.start()).toBe(true);
  const started = await startTestNode({ verifier: jwtVerifier({ remoteJwks }) });
  cleanups.push(() => started.close());
  const errors: unknown[] = [];
  const timers = new ManualTimers();
  const client: CairnClient = createNodeClient(`${started.node.url.replace(/^http/, "ws")}api/sync`, { timers, onError: (error) => errors.push(error) });
  cleanups.push(() => client.close());
  let whoami: string | null | undefined;
  client.subscribe(api.users.whoami, {}, (subject) => (whoami = subject));
  return { provider, clock, log, client, timers, errors, whoami: () => whoami };
}

describe("tokens from a fetcher, verified against the provider's JWKS URL", () => {
  it("follows the provider's key rotation through the client's refresh", async () => {
    const first = await signingKey("2026-01");
    const { provider, clock, client, timers, errors, whoami } = await deployment([first]);
    let current = { key: first, subject: "ada" };
    const asked: boolean[] = [];
    const subject = await client.setAuth(async ({ forceRefresh }) => {
      asked.push(forceRefresh);
      return tokenFor(current.key, current.subject);
    });
    expect(subject).toBe("ada");
    await eventually(() => whoami() === "ada");

    const second = await signingKey("2026-02", "RS256");
    provider.serveKeys([first, second]);
    current = { key: second, subject: "ada-rotated" };
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS);
    // The refresh the client set for its first (maybe cached) token.
    expect(timers.delays()).toEqual([0]);
    timers.fireAll();
    await eventually(() => whoami() === "ada-rotated");
    expect(asked).toEqual([false, true]);
    expect(provider.requests).toBe(2); // the start, and one re-fetch for the new kid
    expect(errors).toEqual([]);
  });

  it("gives up after a refused token and its one forced replacement, leaving the session anonymous", async () => {
    const published = await signingKey("published");
    const { provider, client, errors, whoami } = await deployment([published]);
    const stranger = await signingKey("never-published");
    const asked: boolean[] = [];
    await expect(
      client.setAuth(async ({ forceRefresh }) => {
        asked.push(forceRefresh);
        return tokenFor(stranger, "mallory");
      }),
    ).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(asked).toEqual([false, true]);
    await eventually(() => whoami() === null);
    // Both unknown-kid tokens arrived within the cooldown of the start's fetch: no request for them.
    expect(provider.requests).toBe(1);
    expect(errors).toEqual([]);
  });
});
