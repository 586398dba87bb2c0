/**
 * Scenario: `--jwks-url` against a real JWKS server on a local port (node:http), keys
 * made with jose, time on a ManualClock. The provider rotates its signing key (a token
 * naming the new kid is accepted after one re-fetch); goes down (the cached keys keep
 * verifying, one warning per failure streak, one line on recovery); answers garbage,
 * an empty set, a 500, an oversized document (announced or streamed) or nothing at all
 * (the fetch times out) — each changing nothing; starts down (the node starts, tokens
 * are refused until the keys arrive). An attacker's flood of tokens naming random kids
 * makes the node fetch at most once per cooldown, counted at the server.
 */
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import { JWKS_REFRESH_INTERVAL_MS, JWKS_UNKNOWN_KID_COOLDOWN_MS, RemoteJwks } from "../../src/server/RemoteJwks.js";
import { JwksServer, signingKey, tokenFor, type Answer, type SigningKey } from "./jwksProvider.js";

const servers: JwksServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function provider(keys: readonly SigningKey[]): Promise<JwksServer> {
  const server = new JwksServer();
  servers.push(server);
  server.serveKeys(keys);
  await server.listen();
  return server;
}

function remoteSet(server: JwksServer) {
  const clock = new ManualClock();
  const log: string[] = [];
  const remote = new RemoteJwks({ url: server.url, clock, log: (line) => log.push(line) });
  const verifier = jwtVerifier({ remoteJwks: remote });
  return { clock, log, remote, verifier };
}

const warnings = (log: readonly string[]) => log.filter((line) => line.startsWith("warning:"));

describe("a key set fetched from the provider's URL", () => {
  it("verifies with the fetched keys and accepts a rotated key after one re-fetch for its unknown kid", async () => {
    const first = await signingKey("key-1");
    const second = await signingKey("key-2", "RS256");
    const server = await provider([first]);
    const { clock, remote, verifier, log } = remoteSet(server);
    expect(await remote.start()).toBe(true);
    expect((await verifier.verify(await tokenFor(first))).identity).toMatchObject({ subject: "user-1", name: "Ada" });
    expect(server.requests).toBe(1);

    // The provider rotates; a token signed with the new key arrives within the cooldown of the start's fetch.
    server.serveKeys([first, second]);
    const rotated = await tokenFor(second, "user-2");
    await expect(verifier.verify(rotated)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(server.requests).toBe(1);
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS);
    expect((await verifier.verify(rotated)).identity.subject).toBe("user-2");
    expect(server.requests).toBe(2);
    // Both keys are cached now: neither token costs a request.
    await verifier.verify(await tokenFor(first));
    await verifier.verify(rotated);
    expect(server.requests).toBe(2);
    expect(log).toEqual([]);
  });

  it("drops a key the provider removed once the keys are refreshed", async () => {
    const old = await signingKey("old");
    const current = await signingKey("current");
    const server = await provider([old, current]);
    const { clock, remote, verifier } = remoteSet(server);
    await remote.start();
    const oldToken = await tokenFor(old);
    await verifier.verify(oldToken);
    server.serveKeys([current]);
    clock.advance(JWKS_REFRESH_INTERVAL_MS);
    await verifier.verify(oldToken); // due for a refresh: it starts in the background, this token is not held up
    await remote.idle();
    expect(server.requests).toBe(2);
    await expect(verifier.verify(oldToken)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect((await verifier.verify(await tokenFor(current))).identity.subject).toBe("user-1");
  });

  it("honours the response's Cache-Control max-age for the refresh", async () => {
    const key = await signingKey("k");
    const server = await provider([]);
    server.serveKeys([key], { "cache-control": "public, max-age=120" });
    const { clock, remote, verifier } = remoteSet(server);
    await remote.start();
    const token = await tokenFor(key);
    clock.advance(119_000);
    await verifier.verify(token);
    await remote.idle();
    expect(server.requests).toBe(1);
    clock.advance(1_000);
    await verifier.verify(token);
    await remote.idle();
    expect(server.requests).toBe(2);
  });

  it("keeps the cached keys while the provider is down, warns once, and says when it answers again", async () => {
    const key = await signingKey("k");
    const server = await provider([key]);
    const { clock, remote, verifier, log } = remoteSet(server);
    await remote.start();
    const token = await tokenFor(key);
    await server.stop();
    for (let round = 0; round < 3; round++) {
      clock.advance(JWKS_REFRESH_INTERVAL_MS);
      for (let each = 0; each < 5; each++) expect((await verifier.verify(token)).identity.subject).toBe("user-1");
      await remote.idle();
    }
    expect(remote.fetches).toBe(4); // the start, and one refresh per round: not one per token
    expect(warnings(log)).toHaveLength(1);
    expect(warnings(log)[0]).toMatch(/cannot fetch the JWKS at http:\/\/127\.0\.0\.1:\d+.*keeping the 1 cached key/);

    await server.listen();
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS);
    await verifier.verify(token);
    await remote.idle();
    expect(log.at(-1)).toMatch(/answers again \(1 key/);
    expect(server.requests).toBe(2);
  });

  it("takes garbage, an empty set, an error status, a redirect, an oversized document or no answer for a failure that changes nothing", async () => {
    const key = await signingKey("k");
    const server = await provider([key]);
    const { clock, remote, verifier, log } = remoteSet(server);
    await remote.start();
    const token = await tokenFor(key);
    const huge = JSON.stringify({ keys: [key.publicJwk], padding: "x".repeat(300 * 1024) });
    let hung: ServerResponse | null = null;
    const bad: Record<string, [Answer, RegExp]> = {
      notJson: [(_request, response) => response.end("<html>maintenance</html>"), /not JSON/],
      notAKeySet: [(_request, response) => response.end(JSON.stringify({ keys: "k" })), /not a key set/],
      emptySet: [(_request, response) => response.end(JSON.stringify({ keys: [] })), /not a key set/],
      keysWithoutType: [(_request, response) => response.end(JSON.stringify({ keys: [{ kid: "k" }] })), /not a key set/],
      status500: [
        (_request, response) => {
          response.writeHead(500);
          response.end(JSON.stringify({ keys: [key.publicJwk] }));
        },
        /HTTP 500/,
      ],
      redirect: [
        (_request, response) => {
          response.writeHead(302, { location: "http://127.0.0.1:1/elsewhere" });
          response.end();
        },
        /redirect/,
      ],
      oversizedAnnounced: [
        (_request, response) => {
          response.writeHead(200, { "content-length": String(Buffer.byteLength(huge)) });
          response.end(huge);
        },
        /is \d+ bytes, over the 262144-byte limit/,
      ],
      oversizedStreamed: [
        (_request, response) => {
          // No content-length: the size shows only while reading.
          response.writeHead(200, { "content-type": "application/json" });
          for (let at = 0; at < huge.length; at += 16 * 1024) response.write(huge.slice(at, at + 16 * 1024));
          response.end();
        },
        /is over the 262144-byte limit/,
      ],
      noAnswer: [
        (_request, response) => {
          hung = response;
          response.writeHead(200);
          response.write('{"keys": [');
        },
        /no complete answer within 5000 ms/,
      ],
    };
    for (const [name, [answer, reason]] of Object.entries(bad)) {
      server.answer = answer;
      clock.advance(JWKS_REFRESH_INTERVAL_MS);
      const fetchesBefore = remote.fetches;
      expect((await verifier.verify(token)).identity.subject, name).toBe("user-1");
      if (name === "noAnswer") {
        await vi.waitFor(() => expect(hung).not.toBeNull());
        clock.advance(5_000); // the fetch timeout, on the injected clock
      }
      await remote.idle();
      expect(remote.fetches, name).toBe(fetchesBefore + 1);
      expect(log.at(-1), name).toMatch(reason);
      expect(log.at(-1), name).toMatch(/keeping the 1 cached key/);
      expect((await verifier.verify(token)).identity.subject, name).toBe("user-1");
      // Good again: the streak ends, so the next failure warns again.
      server.serveKeys([key]);
      clock.advance(JWKS_REFRESH_INTERVAL_MS);
      await verifier.verify(token);
      await remote.idle();
      expect(log.at(-1), name).toMatch(/answers again/);
    }
    (hung as ServerResponse | null)?.destroy();
    expect(warnings(log)).toHaveLength(Object.keys(bad).length);
  });

  it("starts while the provider is down, refuses tokens until the keys arrive, then accepts them", async () => {
    const key = await signingKey("k");
    const server = await provider([key]);
    server.serveText(503, "unavailable");
    const { clock, remote, verifier, log } = remoteSet(server);
    expect(await remote.start()).toBe(false);
    expect(warnings(log)).toEqual([expect.stringMatching(/HTTP 503; tokens are refused until it answers/)]);
    const token = await tokenFor(key);
    await expect(verifier.verify(token)).rejects.toMatchObject({ code: "UNAUTHENTICATED", message: expect.stringMatching(/no keys from .* yet \(HTTP 503\)/) });
    expect(server.requests).toBe(1); // within the cooldown: refused without asking again
    server.serveKeys([key]);
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS);
    expect((await verifier.verify(token)).identity.subject).toBe("user-1");
    expect(server.requests).toBe(2);
    expect(warnings(log)).toHaveLength(1);
  });

  it("fetches at most once per cooldown however many tokens name unknown kids", async () => {
    const key = await signingKey("k");
    const server = await provider([key]);
    const { clock, remote, verifier } = remoteSet(server);
    await remote.start();
    const attacker = await signingKey("attacker");
    const forged = (index: number) => tokenFor({ ...attacker, kid: `random-${index}` });
    const flood = async (from: number) => {
      const tokens = await Promise.all(Array.from({ length: 100 }, (_, index) => forged(from + index)));
      const outcomes = await Promise.allSettled(tokens.map((token) => verifier.verify(token)));
      for (const outcome of outcomes) expect(outcome).toMatchObject({ status: "rejected", reason: { code: "UNAUTHENTICATED" } });
      for (const token of tokens.slice(0, 20)) await expect(verifier.verify(token)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    };
    await flood(0);
    expect(server.requests).toBe(1); // still within the cooldown of the start's fetch
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS);
    await flood(1_000); // 100 at once share one fetch; the 20 after it wait for the next cooldown
    expect(server.requests).toBe(2);
    clock.advance(JWKS_UNKNOWN_KID_COOLDOWN_MS - 1);
    await flood(2_000);
    expect(server.requests).toBe(2);
    clock.advance(1);
    await flood(3_000);
    expect(server.requests).toBe(3);
    // The real key still verifies throughout.
    expect((await verifier.verify(await tokenFor(key))).identity.subject).toBe("user-1");
  });

  it("refuses a URL it must not fetch keys from", () => {
    const clock = new ManualClock();
    const open = (url: string) => () => new RemoteJwks({ url, clock, log: () => undefined });
    for (const url of ["not a url", "http://auth.example.com/jwks.json", "ftp://localhost/jwks.json", "file:///etc/jwks.json"]) {
      expect(open(url), url).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(open("http://localhost:8080/jwks.json")).not.toThrow();
    expect(open("https://auth.example.com/.well-known/jwks.json")).not.toThrow();
    expect(() => jwtVerifier({ secret: "0123456789abcdef0123456789abcdef", remoteJwks: open("https://auth.example.com/jwks")() })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});
