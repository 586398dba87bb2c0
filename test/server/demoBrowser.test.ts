/**
 * Scenario: the demo as a person uses it — `cairn serve` with its defaults (the demo
 * app, a directory bucket) and two headless Chromium pages. A message sent in one page
 * appears in the other; a like shows in both; each page sees the other's presence. The
 * server is SIGKILLed and started again on the same store and port: both pages say they
 * are reconnecting, come back by themselves, still show the messages, and a message sent
 * after the restart reaches the other page. Screenshots go to $CAIRN_SCREENSHOT_DIR if set.
 *
 * Needs Debian's chromium (`apt-get install chromium`, done by .ci/run); without it the
 * test is skipped, unless CAIRN_TEST_BROWSER_REQUIRED=1 (CI) makes that a failure.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ServeProcess } from "./serveProcess.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const root = mkdtempSync(join(tmpdir(), "cairn-demo-"));
/** Screenshots kept for a person to look at (not compared): test-artifacts/ in the checkout. */
const ARTIFACTS = join(process.cwd(), "test-artifacts");
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function openPage(browser: Browser, url: string, name: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await context.newPage();
  page.on("pageerror", (error) => console.error(`[${name}] page error: ${error.message}`));
  await page.goto(url);
  await page.getByTestId("name").fill(name);
  await page.getByTestId("name").dispatchEvent("change");
  await poll(() => page.getByTestId("status").getAttribute("data-state")).toBe("connected");
  return page;
}

async function send(page: Page, body: string): Promise<void> {
  await page.getByTestId("body").fill(body);
  await page.getByTestId("send").click();
}

/** Polls until the page shows what is expected (pages are live: bounded by turns of waiting, not asserted timings). */
const poll = <T>(read: () => Promise<T> | T, options: { timeout?: number } = {}) => expect.poll(read, { timeout: options.timeout ?? 15_000, interval: 50 });

const messagesOf = (page: Page) => page.getByTestId("message").allTextContents();

async function screenshot(page: Page, name: string): Promise<void> {
  const directory = process.env["CAIRN_SCREENSHOT_DIR"];
  if (directory) await page.screenshot({ path: join(directory, `${name}.png`) });
}

describe.skipIf(!available)("the demo in two browsers", () => {
  it("shows each page's messages in the other, and both reconnect after the server is killed and restarted", async () => {
    const port = String(await freePort());
    const args = ["--store", join(root, "bucket"), "--local", join(root, "local"), "--port", port];
    let server = await ServeProcess.start(args);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    try {
      const ada = await openPage(browser, server.url, "ada");
      const bob = await openPage(browser, server.url, "bob");
      await send(ada, "hello from ada");
      await poll(() => messagesOf(bob)).toEqual(["adahello from ada"]);
      await send(bob, "hi ada");
      await poll(() => messagesOf(ada)).toEqual(["adahello from ada", "bobhi ada"]);
      await bob.getByTestId("likes").click();
      await poll(() => ada.getByTestId("like-count").textContent()).toBe("1");
      await poll(() => bob.getByTestId("presence").textContent(), { timeout: 15_000 }).toContain("ada");
      await screenshot(ada, "demo-ada");

      await server.kill();
      await poll(() => ada.getByTestId("status").getAttribute("data-state")).not.toBe("connected");
      await poll(() => bob.getByTestId("status").getAttribute("data-state")).not.toBe("connected");
      await screenshot(bob, "demo-bob-reconnecting");
      server = await ServeProcess.start(args);
      for (const page of [ada, bob]) {
        await poll(() => page.getByTestId("status").getAttribute("data-state"), { timeout: 45_000 }).toBe("connected");
      }
      expect(await messagesOf(bob)).toEqual(["adahello from ada", "bobhi ada"]);
      await send(bob, "still here");
      await poll(() => messagesOf(ada)).toEqual(["adahello from ada", "bobhi ada", "bobstill here"]);
      expect(await ada.getByTestId("like-count").textContent()).toBe("1");
      await screenshot(ada, "demo-ada-after-restart");

      // At a phone's width (390 px) the page fits: nothing scrolls sideways, and a message can be sent.
      const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
      await phone.goto(server.url);
      await poll(() => phone.getByTestId("status").getAttribute("data-state")).toBe("connected");
      await phone.getByTestId("name").fill("cyd");
      await phone.getByTestId("name").dispatchEvent("change");
      await send(phone, "from a phone");
      await poll(() => messagesOf(ada)).toContain("cydfrom a phone");
      expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      for (const testId of ["body", "send", "likes"]) {
        const box = await phone.getByTestId(testId).boundingBox();
        expect(box !== null && box.x >= 0 && box.x + box.width <= 390, `${testId} is within the screen`).toBe(true);
      }
      mkdirSync(ARTIFACTS, { recursive: true });
      await phone.screenshot({ path: join(ARTIFACTS, "demo-390.png") });
    } finally {
      await browser.close();
      expect(await server.stop()).toBe(0);
    }
  });
});
