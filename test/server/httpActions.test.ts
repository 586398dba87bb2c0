/**
 * Scenario: an app's HTTP actions served by real nodes over real HTTP (fetch), the app in
 * test/server/httpActionsApp.ts.
 *
 * - A JSON webhook writes through a mutation and reads back through a public and an
 *   internal query; what it wrote is what the ordinary API reads. Twenty posted at once
 *   leave exactly twenty notes.
 * - Bodies stream both ways: 8 MiB of random bytes PUT come back identical.
 * - Routing: prefixes (the longest wins), HEAD through GET without a body, 404 for no
 *   route, 405 with `Allow` for another method's route.
 * - Identity: anonymous without a token, the subject with a valid Bearer token, 401 with
 *   a bad one; several Set-Cookie headers survive.
 * - A handler that throws, returns no Response or calls a missing function answers 500
 *   with nothing of its error's text, and the node's log holds the stack; a body that
 *   fails midway ends that connection only — the node keeps serving. Clients that hang
 *   up in the middle of their request body make the handler's read fail (logged), write
 *   nothing, and leave the node serving.
 * - On a follower (a replica), the webhook's write is forwarded to the writer and its
 *   read that follows sees it.
 * - The admin API lists the routes and their path; a path over one of Cairn's own (/api,
 *   /metrics, /_dashboard) or malformed is refused when the node starts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { SignJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import * as httpActionsApp from "./httpActionsApp.js";
import { startSyncAppNode, startTestNode } from "./serverHarness.js";

const SECRET = "a-test-secret-that-is-long-enough-for-hs256";
const ADMIN_KEY = "http-actions-test-admin-key";
const app = App.fromModule(httpActionsApp, "HTTP actions test app");
const root = mkdtempSync(join(tmpdir(), "cairn-http-actions-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function tokenFor(subject: string): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(subject).setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
}

async function postNote(url: string, channel: string, body: string): Promise<Response> {
  return fetch(`${url}http/hooks/note`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ channel, body }) });
}

describe("HTTP actions", () => {
  it("serve webhooks, streams, prefixes and identities, and answer every failure without leaking it", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const started = await startTestNode({ app, adminKey: ADMIN_KEY, verifier: jwtVerifier({ secret: SECRET }), log: (line) => lines.push(line) });
    const { url } = started.node;
    try {
      // The admin API lists the routes and where they are served.
      const listed = (await (await fetch(`${url}api/admin/functions`, { headers: { authorization: `Admin ${ADMIN_KEY}` } })).json()) as { http: { path: string; routes: string[] } };
      expect(listed.http.path).toBe("/http");
      expect(listed.http.routes).toEqual(expect.arrayContaining(["POST /hooks/note", "PUT /echo", "GET /files/*", "GET /files/private/*", "GET /whoami"]));

      // The webhook writes, then reads back what it wrote (public and internal queries).
      const first = await postNote(url, "inbox", "hello");
      expect(first.status).toBe(201);
      expect(first.headers.get("x-channel")).toBe("inbox");
      expect(await first.json()).toEqual({ notes: ["hello"], count: 1 });
      const query = await fetch(`${url}api/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "notes:list", args: { channel: "inbox" } }) });
      expect(((await query.json()) as { value: unknown }).value).toEqual(["hello"]);
      const many = await Promise.all(Array.from({ length: 20 }, (_, index) => postNote(url, "burst", `n${index}`)));
      expect(many.map((answer) => answer.status)).toEqual(Array(20).fill(201));
      const counts = await Promise.all(many.map(async (answer) => ((await answer.json()) as { count: number }).count));
      expect(Math.max(...counts)).toBe(20);

      // 8 MiB of random bytes stream through and back.
      const payload = randomBytes(8 * 1024 * 1024);
      const echoed = await fetch(`${url}http/echo`, { method: "PUT", headers: { "content-type": "application/x-test" }, body: payload });
      expect(echoed.status).toBe(200);
      expect(echoed.headers.get("content-type")).toBe("application/x-test");
      expect(Buffer.from(await echoed.arrayBuffer()).equals(payload)).toBe(true);

      // Prefixes: the longest wins; HEAD runs GET's route without a body.
      const file = await fetch(`${url}http/files/a/b.txt?v=3`);
      expect(await file.text()).toBe("file /http/files/a/b.txt 3");
      expect(file.headers.get("cache-control")).toBe("max-age=60");
      const privateFile = await fetch(`${url}http/files/private/key`);
      expect([privateFile.status, await privateFile.text()]).toEqual([403, "private"]);
      const head = await fetch(`${url}http/files/a`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toBe("text/plain");
      expect(await head.text()).toBe("");

      // No route, another method's route.
      const nowhere = await fetch(`${url}http/nowhere`);
      expect(nowhere.status).toBe(404);
      expect(((await nowhere.json()) as { error: { code: string } }).error.code).toBe("FUNCTION_NOT_FOUND");
      expect((await fetch(`${url}http/files`)).status).toBe(404);
      const wrongMethod = await fetch(`${url}http/echo`, { method: "DELETE" });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get("allow")).toBe("PUT");
      const getOfPost = await fetch(`${url}http/hooks/note`);
      expect([getOfPost.status, getOfPost.headers.get("allow")]).toEqual([405, "POST"]);
      const postOfGet = await fetch(`${url}http/whoami`, { method: "POST" });
      expect([postOfGet.status, postOfGet.headers.get("allow")]).toEqual([405, "GET, HEAD"]);

      // Identity and cookies.
      const anonymous = await fetch(`${url}http/whoami`);
      expect(await anonymous.text()).toBe("anonymous");
      expect(anonymous.headers.getSetCookie()).toEqual(["a=1; Path=/", "b=2; Path=/"]);
      const ada = await fetch(`${url}http/whoami`, { headers: { authorization: `Bearer ${await tokenFor("ada")}` } });
      expect(await ada.text()).toBe("ada");
      const forged = await fetch(`${url}http/whoami`, { headers: { authorization: "Bearer not-a-token" } });
      expect(forged.status).toBe(401);
      expect(((await forged.json()) as { error: { code: string } }).error.code).toBe("UNAUTHENTICATED");

      // Failures: 500 without the error's text; the stack in the log.
      const thrown = await fetch(`${url}http/throws`, { method: "POST" });
      expect(thrown.status).toBe(500);
      const thrownText = await thrown.text();
      expect(thrownText).not.toContain("secret-token-xyz");
      expect(lines.some((line) => line.includes("HTTP action POST /throws failed") && line.includes("secret-token-xyz") && line.includes("httpActionsApp"))).toBe(true);
      const notResponse = await fetch(`${url}http/not-a-response`);
      expect(notResponse.status).toBe(500);
      expect(lines.some((line) => line.includes("GET /not-a-response") && line.includes("not a Response"))).toBe(true);
      const missing = await fetch(`${url}http/calls-missing`);
      expect(missing.status).toBe(500);
      expect(lines.some((line) => line.includes("GET /calls-missing") && line.includes("notes:nope"))).toBe(true);

      // A body that breaks midway ends its connection; the node goes on serving.
      // (The status may not even have left: the client sees the request or its body fail.)
      const broken = await fetch(`${url}http/breaks-midway`).then((answer) => answer.text()).then(
        () => "completed",
        () => "failed",
      );
      expect(broken).toBe("failed");
      expect(lines.some((line) => line.includes("GET /breaks-midway") && line.includes("disk gone"))).toBe(true);
      expect(await (await fetch(`${url}http/whoami`)).text()).toBe("anonymous");

      // Hostile clients: ten that promise a body and hang up midway. Each handler's read
      // of the body fails (logged); nothing is written; the node goes on serving.
      const notesBefore = ((await (await postNote(url, "burst", "probe")).json()) as { count: number }).count;
      const { hostname, port } = new URL(url);
      await Promise.all(
        Array.from({ length: 10 }, () =>
          new Promise<void>((resolve) => {
            const socket = connect(Number(port), hostname, () => {
              socket.write(`POST /http/hooks/note HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"channel": "burst", "bo`);
              setTimeout(() => socket.destroy(), 50);
            });
            socket.on("error", () => undefined);
            socket.on("close", () => resolve());
          }),
        ),
      );
      await expect.poll(() => lines.filter((line) => line.includes("HTTP action POST /hooks/note failed")).length).toBe(10);
      expect(((await (await postNote(url, "burst", "after")).json()) as { count: number }).count).toBe(notesBefore + 1);
    } finally {
      await started.close();
    }
  });

  it("refuses a path over one of Cairn's own before the bucket is touched", async () => {
    for (const httpActionsPath of ["/api", "/api/hooks", "/_dashboard", "/metrics", "relative", "/trailing/"]) {
      const refused = await startTestNode({ app, httpActionsPath }).then(
        async (started) => {
          await started.close();
          return null;
        },
        (error: unknown) => error as { code?: string; message?: string },
      );
      expect(refused?.code, httpActionsPath).toBe("INVALID_ARGUMENT");
      expect(refused?.message).toMatch(/HTTP actions path must be like "\/http"/);
    }
  });

  it("run on a follower: the write goes to the writer and the read after it sees it", { timeout: 60_000 }, async () => {
    const directory = mkdtempSync(join(root, "follower-"));
    // Followers forward writes with the deployment's admin key.
    const writer = await startSyncAppNode(directory, "writer", { app, adminKey: ADMIN_KEY });
    const lines: string[] = [];
    const follower = await startSyncAppNode(directory, "follower", { app, adminKey: ADMIN_KEY, role: "replica", log: (line) => lines.push(line) });
    try {
      for (let round = 0; round < 5; round++) {
        const answer = await postNote(follower.url, "remote", `r${round}`);
        expect(answer.status, lines.join("\n")).toBe(201);
        const { notes, count } = (await answer.json()) as { notes: string[]; count: number };
        // Each read comes after the request's own write, on the follower.
        expect(notes).toContain(`r${round}`);
        expect(count).toBe(round + 1);
      }
      const atWriter = await fetch(`${writer.url}api/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "notes:list", args: { channel: "remote" } }) });
      expect(((await atWriter.json()) as { value: string[] }).value).toEqual(["r0", "r1", "r2", "r3", "r4"]);
    } finally {
      await follower.stop();
      await writer.stop();
    }
  });
});
