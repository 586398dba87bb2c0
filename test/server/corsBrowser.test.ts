/**
 * Scenario: what a browser does with the headers. Node A serves a built single-page app
 * from a directory; Chromium opens one of its routes (`/rooms/42`, the SPA fallback) and,
 * from that page, calls two other nodes: B allows A's origin, C allows none. Against B
 * the preflighted JSON call, the client script import and the WebSocket all work. Against
 * C the preflighted call and the WebSocket fail in the page, and a "simple" text/plain
 * POST — sent by the browser without asking first — is refused by C before it runs: its
 * mutation is not in C's data.
 *
 * Needs Debian's chromium; skipped without it unless CAIRN_TEST_BROWSER_REQUIRED=1.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RunningNode } from "../../src/server/index.js";
import { rawRequest } from "./rawHttp.js";
import { startTestNode } from "./serverHarness.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const site = mkdtempSync(join(tmpdir(), "cairn-cors-site-"));
mkdirSync(join(site, "assets"));
writeFileSync(join(site, "index.html"), `<!doctype html><html><head><title>the app</title></head><body><h1 id="app">the app</h1></body></html>`);
afterAll(() => rmSync(site, { recursive: true, force: true }));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node(overrides: Parameters<typeof startTestNode>[0]): Promise<RunningNode> {
  const started = await startTestNode(overrides);
  cleanups.push(() => started.close());
  return started.node;
}

async function notesOf(url: string, channel: string): Promise<unknown> {
  const answer = await rawRequest(url, "/api/query", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "notes:list", args: { channel } }) });
  return JSON.parse(answer.body.toString()).value;
}

describe.skipIf(!available)("CORS as a browser applies it", () => {
  it("lets a page of an allowed origin call, import the client and open the socket; a refused origin's calls fail and its simple POST does not run", async () => {
    const app = await node({ staticDir: site });
    const appOrigin = new URL(app.url).origin;
    const allowing = await node({ corsOrigins: [appOrigin] });
    const refusing = await node({});
    let browser: Browser | null = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    cleanups.push(async () => {
      await browser?.close();
      browser = null;
    });
    const page = await (await browser.newContext()).newPage();
    const response = await page.goto(new URL("/rooms/42", app.url).href);
    expect(response?.status()).toBe(200);
    expect(await page.locator("#app").textContent()).toBe("the app");

    const inPage = (base: string) =>
      page.evaluate(async (base) => {
        const outcome = async (run: () => Promise<string>) => {
          try {
            return await run();
          } catch (error) {
            return `failed: ${(error as Error).name}`;
          }
        };
        const json = await outcome(async () => {
          const answer = await fetch(`${base}api/mutation`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "notes:add", args: { channel: "page", body: "preflighted" } }) });
          return `${answer.status} ${await answer.text()}`;
        });
        // A simple request: the browser sends it without a preflight, whatever the answer.
        const simple = await outcome(async () => {
          const answer = await fetch(`${base}api/mutation`, { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify({ path: "notes:add", args: { channel: "page", body: "simple" } }) });
          return `${answer.status}`;
        });
        const script = await outcome(async () => {
          // Built from text: the test runner would rewrite an import() written here.
          const load = new Function("url", "return import(url)") as (url: string) => Promise<Record<string, unknown>>;
          const client = await load(`${base}cairn-client.js`);
          return Object.keys(client).length > 0 ? "imported" : "empty";
        });
        const socket = await new Promise<string>((resolve) => {
          const ws = new WebSocket(`${base.replace(/^http/, "ws")}api/sync`);
          ws.onopen = () => {
            ws.close();
            resolve("open");
          };
          ws.onerror = () => resolve("failed");
        });
        return { json, simple, script, socket };
      }, base);

    const allowed = await inPage(allowing.url);
    expect(allowed.json).toMatch(/^200 .*"value":11/);
    expect(allowed.simple).toBe("200");
    expect(allowed.script).toBe("imported");
    expect(allowed.socket).toBe("open");
    expect(await notesOf(allowing.url, "page")).toEqual(["preflighted", "simple"]);

    const refused = await inPage(refusing.url);
    expect(refused).toEqual({ json: "failed: TypeError", simple: "failed: TypeError", script: "failed: TypeError", socket: "failed" });
    expect(await notesOf(refusing.url, "page")).toEqual([]);
  });
});
