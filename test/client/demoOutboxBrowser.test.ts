/**
 * Scenario: the demo's IndexedDB outbox in Chromium, against `cairn serve`. Ada's page
 * loses the server (its WebSockets are refused; the page itself still loads), sends a
 * message — greyed "sending…", not seen by Bob — and reloads: the message is still
 * there, pending, read back from IndexedDB. The server comes back: the message reaches
 * Bob exactly once and shows as sent in Ada's page. Then an outbox whose record is
 * altered in IndexedDB is reported on reload, its message never sent, its text kept in
 * the `quarantined` store.
 *
 * Needs Debian's chromium; skipped without it unless CAIRN_TEST_BROWSER_REQUIRED=1.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ServeProcess } from "../server/serveProcess.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const root = mkdtempSync(join(tmpdir(), "cairn-demo-outbox-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A page of its own browser context whose sync sockets are refused while `network.offline`. */
async function openPage(browser: Browser, url: string, name: string): Promise<{ page: Page; context: BrowserContext; network: { offline: boolean } }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const network = { offline: false };
  await context.routeWebSocket(/\/api\/sync$/, (socket) => {
    if (network.offline) socket.close();
    else socket.connectToServer();
  });
  const page = await context.newPage();
  page.on("pageerror", (error) => console.error(`[${name}] page error: ${error.message}`));
  await page.goto(url);
  await page.getByTestId("name").fill(name);
  await page.getByTestId("name").dispatchEvent("change");
  await poll(() => page.getByTestId("status").getAttribute("data-state")).toBe("connected");
  return { page, context, network };
}

const poll = <T>(read: () => Promise<T> | T, options: { timeout?: number } = {}) => expect.poll(read, { timeout: options.timeout ?? 15_000, interval: 50 });
const messagesOf = (page: Page) => page.getByTestId("message").allTextContents();
const pendingOf = (page: Page) => page.getByTestId("pending-message").allTextContents();

async function send(page: Page, body: string): Promise<void> {
  await page.getByTestId("body").fill(body);
  await page.getByTestId("send").click();
}

describe.skipIf(!available)("the demo's outbox in a browser", () => {
  it("keeps a message sent offline pending across a reload and sends it once when the server is back; reports an altered outbox", async () => {
    const port = String(await freePort());
    const server = await ServeProcess.start(["--store", join(root, "bucket"), "--local", join(root, "local"), "--port", port]);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    try {
      const ada = await openPage(browser, server.url, "ada");
      const bob = await openPage(browser, server.url, "bob");
      await send(ada.page, "before");
      await poll(() => messagesOf(bob.page)).toEqual(["adabefore"]);

      // Ada is offline: a reload finds no server to sync with, and the message waits.
      ada.network.offline = true;
      await ada.page.reload();
      await poll(() => ada.page.getByTestId("status").getAttribute("data-state")).not.toBe("connected");
      await send(ada.page, "written offline");
      await poll(() => pendingOf(ada.page)).toEqual(["adawritten offlinesending…"]);
      await ada.page.reload();
      // Offline, the reloaded page has no messages from the server, only its pending one.
      await poll(() => pendingOf(ada.page)).toEqual(["adawritten offlinesending…"]);
      expect(await messagesOf(ada.page)).toEqual([]);
      expect(await messagesOf(bob.page)).toEqual(["adabefore"]);

      // Back online: it is sent, once.
      ada.network.offline = false;
      await poll(() => ada.page.getByTestId("status").getAttribute("data-state"), { timeout: 45_000 }).toBe("connected");
      await poll(() => messagesOf(ada.page)).toEqual(["adabefore", "adawritten offline"]);
      expect(await pendingOf(ada.page)).toEqual([]);
      await poll(() => messagesOf(bob.page)).toEqual(["adabefore", "adawritten offline"]);
      await send(bob.page, "got it");
      await poll(() => messagesOf(ada.page)).toEqual(["adabefore", "adawritten offline", "bobgot it"]);

      // An outbox altered at rest: reported, its message never sent, its text kept aside.
      ada.network.offline = true;
      await ada.page.reload();
      await send(ada.page, "never to be sent");
      await poll(() => pendingOf(ada.page)).toEqual(["adanever to be sentsending…"]);
      const altered = await ada.page.evaluate(alterOutbox);
      expect(altered).toBe(1);
      ada.network.offline = false;
      await ada.page.reload();
      await poll(() => ada.page.getByTestId("error").textContent()).toContain("is unreadable");
      await poll(() => ada.page.getByTestId("status").getAttribute("data-state"), { timeout: 45_000 }).toBe("connected");
      expect(await pendingOf(ada.page)).toEqual([]);
      expect(await ada.page.evaluate(quarantinedTexts)).toEqual([expect.stringContaining("never to be sent")]);
      await send(ada.page, "after");
      await poll(() => messagesOf(bob.page)).toEqual(["adabefore", "adawritten offline", "bobgot it", "adaafter"]);
    } finally {
      await browser.close();
      expect(await server.stop()).toBe(0);
    }
  });
});

/**
 * Scripts run in the page (as text: the tests compile without the DOM's types). The
 * first alters one character of every outbox record in IndexedDB, so its checksum no
 * longer matches, and answers how many it altered; the second answers the texts the
 * outbox kept aside.
 */
const OPEN_DATABASE = `new Promise((resolve, reject) => {
  const request = indexedDB.open("cairn-demo-outbox");
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
})`;
const done = (request: string) => `new Promise((resolve, reject) => { const r = ${request}; r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); })`;

const alterOutbox = `(async () => {
  const database = await ${OPEN_DATABASE};
  const transaction = database.transaction("outboxes", "readwrite");
  const store = transaction.objectStore("outboxes");
  const keys = await ${done("store.getAllKeys()")};
  for (const key of keys) {
    const text = await ${done("store.get(key)")};
    store.put(text.replace('"seq":', '"seq":9'), key);
  }
  await new Promise((resolve) => (transaction.oncomplete = resolve));
  database.close();
  return keys.length;
})()`;

const quarantinedTexts = `(async () => {
  const database = await ${OPEN_DATABASE};
  const kept = await ${done('database.transaction("quarantined", "readonly").objectStore("quarantined").getAll()')};
  database.close();
  return kept.map((entry) => entry.text);
})()`;
