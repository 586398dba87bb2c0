/**
 * Scenarios: a node in this process with a list of allowed origins, reached over real
 * sockets by what browsers send. An allowed origin's preflight is answered 204 with the
 * methods, headers and max-age, and its calls and the client script carry
 * `Access-Control-Allow-Origin: <origin>` and `Vary: Origin`. A refused origin — the way
 * a hostile page reaches the API: a preflight, a "simple" text/plain POST as a form
 * sends it, a GET, a script load, a WebSocket — gets 403, no CORS header and no data,
 * and its mutation does not run. Requests with no Origin (Node, curl) and same-origin
 * ones (also behind a TLS proxy) get through without CORS headers. `*` allows any page,
 * LOCALHOST_ORIGINS any page on this machine and nothing that only looks like it. Origins
 * that are not origins are refused at start.
 */
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { CorsPolicy, LOCALHOST_ORIGINS, parseCorsOrigins, type RunningNode } from "../../src/server/index.js";
import { corsHeaders, decoded, rawRequest } from "./rawHttp.js";
import { startTestNode } from "./serverHarness.js";

const ALLOWED = "https://app.example.com";
const EVIL = "https://evil.example";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node(overrides: Parameters<typeof startTestNode>[0] = {}): Promise<RunningNode> {
  const started = await startTestNode(overrides);
  cleanups.push(() => started.close());
  return started.node;
}

const json = { "content-type": "application/json" };
const call = (path: string, args: Record<string, unknown>) => JSON.stringify({ path, args });

/** The notes of `channel`, read without an Origin (as a Node client). */
async function notesOf(url: string, channel: string): Promise<unknown> {
  const answer = await rawRequest(url, "/api/query", { method: "POST", headers: json, body: call("notes:list", { channel }) });
  return JSON.parse(answer.body.toString()).value;
}

function preflight(url: string, path: string, origin: string) {
  return rawRequest(url, path, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
  });
}

/** Resolves with the HTTP status of a refused upgrade, or "open". */
function upgradeOutcome(url: string, origin?: string): Promise<number | "open"> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${url.replace(/^http/, "ws")}api/sync`, origin !== undefined ? { origin } : {});
    socket.once("open", () => {
      socket.close();
      resolve("open");
    });
    socket.once("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0);
      response.resume();
      socket.terminate();
    });
    socket.once("error", (error) => reject(error));
  });
}

describe("CORS on the API, the client script and the sync socket", () => {
  it("answers an allowed origin's preflight and calls with its origin, the methods and headers, and Vary", async () => {
    const { url } = await node({ corsOrigins: [ALLOWED] });
    const allowed = await preflight(url, "/api/mutation", ALLOWED);
    expect(allowed.status).toBe(204);
    expect(allowed.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(allowed.headers["access-control-allow-methods"]).toMatch(/POST/);
    expect(allowed.headers["access-control-allow-headers"]).toMatch(/Authorization/);
    expect(allowed.headers["access-control-allow-headers"]).toMatch(/Content-Type/);
    expect(Number(allowed.headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(allowed.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(allowed.headers["vary"]).toMatch(/Origin/);

    const mutation = await rawRequest(url, "/api/mutation", { method: "POST", headers: { ...json, origin: ALLOWED }, body: call("notes:add", { channel: "cors", body: "from the app" }) });
    expect(mutation.status).toBe(200);
    expect(mutation.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(mutation.headers["vary"]).toMatch(/Origin/);
    expect(await notesOf(url, "cors")).toEqual(["from the app"]);

    const script = await rawRequest(url, "/cairn-client.js", { headers: { origin: ALLOWED, "accept-encoding": "br" } });
    expect(script.status).toBe(200);
    expect(script.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(script.headers["vary"]).toMatch(/Origin/);
    expect(script.headers["vary"]).toMatch(/Accept-Encoding/);
    expect(decoded(script).byteLength).toBeGreaterThan(1_000);
    expect(await upgradeOutcome(url, ALLOWED)).toBe("open");
  });

  it("refuses a refused origin's preflight, POST, GET, script load and WebSocket with 403, no CORS header and no data; its mutation does not run", async () => {
    const { url } = await node({ corsOrigins: [ALLOWED] });
    const refusedPreflight = await preflight(url, "/api/mutation", EVIL);
    expect(refusedPreflight.status).toBe(403);
    expect(corsHeaders(refusedPreflight)).toEqual([]);

    // What a hidden form on a hostile page sends: no preflight, a body that parses as JSON.
    const formPost = await rawRequest(url, "/api/mutation", {
      method: "POST",
      headers: { origin: EVIL, "content-type": "text/plain" },
      body: call("notes:add", { channel: "cors", body: "forged" }),
    });
    expect(formPost.status).toBe(403);
    expect(corsHeaders(formPost)).toEqual([]);
    expect(JSON.parse(formPost.body.toString())).toEqual({ error: expect.objectContaining({ code: "FORBIDDEN" }) });
    const jsonPost = await rawRequest(url, "/api/mutation", { method: "POST", headers: { ...json, origin: EVIL }, body: call("notes:add", { channel: "cors", body: "forged" }) });
    expect(jsonPost.status).toBe(403);
    // Origins that differ from the allowed one only in scheme, port or a suffix are other origins.
    for (const lookalike of ["http://app.example.com", "https://app.example.com:8443", "https://app.example.com.evil.example", "null"]) {
      const answer = await rawRequest(url, "/api/mutation", { method: "POST", headers: { ...json, origin: lookalike }, body: call("notes:add", { channel: "cors", body: "forged" }) });
      expect(answer.status, lookalike).toBe(403);
      expect(corsHeaders(answer), lookalike).toEqual([]);
    }
    expect(await notesOf(url, "cors")).toEqual([]);

    const query = await rawRequest(url, "/api/query", { method: "POST", headers: { ...json, origin: EVIL }, body: call("notes:list", { channel: "cors" }) });
    expect(query.status).toBe(403);
    expect(query.body.toString()).not.toContain("value");
    const health = await rawRequest(url, "/api/health", { headers: { origin: EVIL } });
    expect(health.status).toBe(403);
    expect(health.body.toString()).not.toMatch(/shards|frontier/);
    const script = await rawRequest(url, "/cairn-client.js", { headers: { origin: EVIL } });
    expect(script.status).toBe(403);
    expect(corsHeaders(script)).toEqual([]);
    expect(await upgradeOutcome(url, EVIL)).toBe(403);
  });

  it("lets requests with no Origin and same-origin ones through without CORS headers, and refuses other origins by default", async () => {
    const { url } = await node();
    const plain = await rawRequest(url, "/api/mutation", { method: "POST", headers: json, body: call("notes:add", { channel: "plain", body: "from node" }) });
    expect(plain.status).toBe(200);
    expect(corsHeaders(plain)).toEqual([]);
    expect(await upgradeOutcome(url)).toBe("open");

    // The page's origin is the scheme and Host it was loaded from (the Host this client sends).
    const own = new URL(url).origin;
    const sameOrigin = await rawRequest(url, "/api/mutation", { method: "POST", headers: { ...json, origin: own }, body: call("notes:add", { channel: "plain", body: "from the page" }) });
    expect(sameOrigin.status).toBe(200);
    expect(corsHeaders(sameOrigin)).toEqual([]);
    expect(await upgradeOutcome(url, own)).toBe("open");
    // Behind a TLS-terminating proxy that forwards the scheme and host.
    const proxied = await rawRequest(url, "/api/health", { headers: { origin: "https://app.example.com", host: "app.example.com", "x-forwarded-proto": "https" } });
    expect(proxied.status).toBe(200);
    expect(corsHeaders(proxied)).toEqual([]);

    const foreign = await rawRequest(url, "/api/mutation", { method: "POST", headers: { ...json, origin: ALLOWED }, body: call("notes:add", { channel: "plain", body: "forged" }) });
    expect(foreign.status).toBe(403);
    expect((await preflight(url, "/api/query", ALLOWED)).status).toBe(403);
    expect(await upgradeOutcome(url, ALLOWED)).toBe(403);
    expect(await notesOf(url, "plain")).toEqual(["from node", "from the page"]);
    // Static and status routes are not CORS's: a page may still link to them.
    expect((await rawRequest(url, "/", { headers: { origin: EVIL } })).status).toBe(200);
  });

  it("allows any page with `*`, and any page on this machine (only) with LOCALHOST_ORIGINS", async () => {
    const any = await node({ corsOrigins: ["*"] });
    for (const origin of [EVIL, "null", "http://localhost:5173"]) {
      const answer = await rawRequest(any.url, "/api/health", { headers: { origin } });
      expect(answer.status, origin).toBe(200);
      expect(answer.headers["access-control-allow-origin"]).toBe(origin);
    }
    const local = await node({ corsOrigins: [LOCALHOST_ORIGINS] });
    for (const origin of ["http://localhost:5173", "https://localhost:8443", "http://127.0.0.1:3000", "http://[::1]:5173", "http://localhost"]) {
      expect((await preflight(local.url, "/api/mutation", origin)).status, origin).toBe(204);
      expect(await upgradeOutcome(local.url, origin), origin).toBe("open");
    }
    for (const origin of ["http://localhost.evil.example", "http://127.0.0.1.evil.example:5173", "http://evil.example:5173", "file://", "null", "chrome-extension://localhost"]) {
      expect((await preflight(local.url, "/api/mutation", origin)).status, origin).toBe(403);
      expect(await upgradeOutcome(local.url, origin), origin).toBe(403);
    }
  });

  it("takes --cors-origin values as origins, comma lists included, and refuses anything else at start", async () => {
    expect(parseCorsOrigins(["HTTPS://App.Example.com:443/", "http://localhost:5173,capacitor://localhost", " * "])).toEqual(["https://app.example.com", "http://localhost:5173", "capacitor://localhost", "*"]);
    for (const bad of ["app.example.com", "https://app.example.com/path", "https://user@app.example.com", "https://app.example.com?x=1", "localhost:5173"]) {
      expect(() => parseCorsOrigins([bad]), bad).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      expect(() => new CorsPolicy([bad]), bad).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    await expect(startTestNode({ corsOrigins: ["https://app.example.com/app"] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
