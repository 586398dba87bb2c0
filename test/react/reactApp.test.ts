/**
 * Scenario: cairn/react in a real browser. A small React app (test/react/app: two pages,
 * "Tasks" and "Detail") is built by vite, served as static files, and opened in headless
 * Chromium against a real Cairn node serving test/react/tasksApp.ts (which lets that
 * origin's pages in); a second client (in
 * Node) writes meanwhile, as another user would.
 * - live update: a task the other client adds appears in the list;
 * - pagination under inserts: with two pages loaded, the other client inserts in the
 *   middle of page 1, right before and right after the page boundary, before the first
 *   row and inside page 2, and deletes a row; then a third page, more inserts at the new
 *   boundary and past the end. Every list the page ever rendered is checked: ordered, no
 *   row twice, and no row missing before the last one shown;
 * - page splitting: a burst of 24 inserts into page 1 (numItems 5) grows it past 2 × 5;
 *   the page is split (more live page subscriptions), and no list rendered meanwhile has
 *   a gap, a duplicate, or a row out of order;
 * - skip, live detail and errors: the detail page is skipped until a task is chosen,
 *   follows a rename by the other client, and shows a failing query's error both through
 *   useQueryState and through an error boundary around useQuery;
 * - optimistic update: the like count goes up while the server still holds the bump
 *   uncommitted, stays once it commits, and goes back when a held bump is refused.
 * Screenshots go to test-artifacts/react/ (or $CAIRN_SCREENSHOT_DIR).
 *
 * Needs Debian's chromium; without it the test is skipped, unless
 * CAIRN_TEST_BROWSER_REQUIRED=1 (CI) makes that a failure.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiOf, type CairnClient } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import { App } from "../../src/functions/App.js";
import { FsObjectStore } from "../../src/objectstore/index.js";
import { startServer, type RunningNode } from "../../src/server/index.js";
import { serveDirectory } from "./staticServer.js";
import * as tasksApp from "./tasksApp.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const here = dirname(fileURLToPath(import.meta.url));
const screenshots = process.env["CAIRN_SCREENSHOT_DIR"] ?? join(here, "../../test-artifacts/react");
const api = apiOf<typeof tasksApp.functions>();

/** Polls until the page shows what is expected (pages are live: bounded by turns of waiting, not asserted timings). */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 15_000, interval: 50 });

describe.skipIf(!available)("cairn/react in Chromium", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-react-"));
  let node: RunningNode;
  let store: FsObjectStore;
  let site: Awaited<ReturnType<typeof serveDirectory>>;
  let browser: Browser;
  let page: Page;
  let other: CairnClient;
  const ids = new Map<number, string>();

  beforeAll(async () => {
    const built = join(root, "site");
    await build({ root: join(here, "app"), configFile: false, logLevel: "warn", build: { outDir: built, emptyOutDir: true, minify: false } });
    site = await serveDirectory(built);
    store = new FsObjectStore(join(root, "bucket"));
    node = await startServer({
      store,
      localDirectory: join(root, "local"),
      app: App.fromModule(tasksApp, "react test app"),
      log: () => undefined,
      // The page comes from the static server's origin, another port than the node's.
      corsOrigins: [new URL(site.url).origin],
    });
    const syncUrl = `${node.url.replace(/^http/, "ws")}api/sync`;
    other = createNodeClient(syncUrl, { onError: () => undefined });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    const context = await browser.newContext({ viewport: { width: 900, height: 640 } });
    page = await context.newPage();
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    await page.addInitScript(() => ((globalThis as { shownRanks?: number[][] }).shownRanks = []));
    await page.goto(`${site.url}?sync=${encodeURIComponent(syncUrl)}`);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 30_000 });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    other?.close();
    await site?.close();
    await node?.stop();
    await store?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const shownRanks = async () => page.getByTestId("task").evaluateAll((items) => items.map((item) => Number((item as unknown as { dataset: { rank: string } }).dataset.rank)));
  const addTask = async (rank: number) => ids.set(rank, await other.mutation(api.tasks.add, { title: `task ${rank}`, rank }));

  const renders = async () => page.evaluate(() => (globalThis as { shownRanks?: number[][] }).shownRanks ?? []);
  const livePageSubscriptions = async () => page.evaluate(() => (globalThis as { livePageSubscriptions?: number }).livePageSubscriptions ?? 0);

  async function screenshot(name: string): Promise<void> {
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: join(screenshots, `${name}.png`) });
  }

  it("shows a task another client adds (a live update)", async () => {
    await poll(() => page.getByTestId("page-status").textContent()).toBe("Exhausted");
    await addTask(10);
    await poll(shownRanks).toEqual([10]);
  });

  it("keeps the loaded pages gapless, ordered and duplicate-free while another client inserts and deletes", async () => {
    for (let rank = 20; rank <= 120; rank += 10) await addTask(rank);
    await poll(shownRanks).toEqual([10, 20, 30, 40, 50]);
    await poll(() => page.getByTestId("page-status").textContent()).toBe("CanLoadMore");
    await page.getByTestId("load-more").click();
    await poll(shownRanks).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);

    // Page 1 is pinned at 50 now; page 2 holds the 5 rows after it.
    for (const rank of [25, 45, 55, 5, 65]) await addTask(rank);
    await other.mutation(api.tasks.remove, { id: ids.get(30)! as never });
    await poll(shownRanks).toEqual([5, 10, 20, 25, 40, 45, 50, 55, 60, 65, 70, 80]);
    await screenshot("two-pages-after-inserts");

    await page.getByTestId("load-more").click();
    await poll(shownRanks).toEqual([5, 10, 20, 25, 40, 45, 50, 55, 60, 65, 70, 80, 90, 100, 110, 120]);
    await poll(() => page.getByTestId("page-status").textContent()).toBe("Exhausted");
    // At the new boundary (page 2 is pinned at 80) and past the end: page 3 takes both until it is full.
    for (const rank of [85, 125, 79]) await addTask(rank);
    const everything = [5, 10, 20, 25, 40, 45, 50, 55, 60, 65, 70, 79, 80, 85, 90, 100, 110, 120, 125];
    expect(await other.query(api.tasks.ranks)).toEqual(everything);
    await poll(shownRanks).toEqual(everything.filter((rank) => rank !== 125));
    await poll(() => page.getByTestId("page-status").textContent()).toBe("CanLoadMore");
    await page.getByTestId("load-more").click();
    await poll(shownRanks).toEqual(everything);

    // Every list ever rendered: in order, no duplicates, and no row missing below the last one shown.
    const renders = await page.evaluate(() => (globalThis as { shownRanks?: number[][] }).shownRanks ?? []);
    expect(renders.length).toBeGreaterThan(5);
    for (const render of renders) {
      expect(render).toEqual([...render].sort((a, b) => a - b));
      expect(new Set(render).size).toBe(render.length);
      const last = render[render.length - 1] ?? -Infinity;
      // Rows that existed from the first render to the last (30 was deleted midway).
      const throughout = [10, 20, 40, 50, 60, 70, 80, 90, 100, 110, 120].filter((rank) => rank <= last && render.length > 1);
      for (const rank of throughout) expect(render).toContain(rank);
    }
  });

  it("splits a loaded page that a burst of inserts grows past 2 × its numItems, never showing a gap or a duplicate", async () => {
    // Four pages are loaded (5 rows each when loaded); page 1 is pinned at rank 50 and holds 7 rows.
    const before = await other.query(api.tasks.ranks);
    await poll(shownRanks).toEqual(before);
    const subscriptionsBefore = await livePageSubscriptions();
    expect(subscriptionsBefore).toBe(4);
    const from = (await renders()).length;

    // 24 rows between 40 and 45 (inside page 1), in parallel bursts of 6: page 1 grows to 31 rows, past 2 × 5.
    const burst = Array.from({ length: 24 }, (_, i) => 40 + (i + 1) * 0.2);
    for (let at = 0; at < burst.length; at += 6) await Promise.all(burst.slice(at, at + 6).map(addTask));
    const everything = await other.query(api.tasks.ranks);
    expect(everything).toHaveLength(before.length + burst.length);
    await poll(shownRanks).toEqual(everything);
    // The page was split (and its halves again): more live page subscriptions than pages loaded.
    await poll(livePageSubscriptions).toBeGreaterThan(subscriptionsBefore);
    const subscriptionsAfter = await livePageSubscriptions();
    await screenshot("after-split");

    // Every list rendered during the burst: in order, no row twice, and every row that existed before it.
    const during = (await renders()).slice(from);
    expect(during.length).toBeGreaterThan(1);
    for (const render of during) {
      expect(render).toEqual([...render].sort((a, b) => a - b));
      expect(new Set(render).size).toBe(render.length);
      for (const rank of before) expect(render).toContain(rank);
      for (const rank of render) expect(everything).toContain(rank);
    }
    // 31 rows could not stay in one page of at most 2 × 5.
    expect(subscriptionsAfter).toBeGreaterThanOrEqual(subscriptionsBefore + 2);
  });

  it("skips the detail query until a task is chosen, follows it live, and shows a failing query's error", async () => {
    await page.getByTestId("tab-detail").click();
    await poll(() => page.getByTestId("detail-status").textContent()).toBe("skipped");
    await poll(() => page.getByTestId("broken-state").textContent()).toBe("APP_ERROR: this query always fails");
    await poll(() => page.getByTestId("boundary").textContent()).toContain("this query always fails");
    // Back on the first page, a new list starts from its first page.
    await page.getByTestId("tab-tasks").click();
    await page.getByTestId("task").filter({ hasText: "task 25" }).getByRole("link").click();
    await poll(() => page.getByTestId("detail-title").textContent()).toBe("task 25");
    await other.mutation(api.tasks.rename, { id: ids.get(25)! as never, title: "renamed elsewhere" });
    await poll(() => page.getByTestId("detail-title").textContent()).toBe("renamed elsewhere");
    await screenshot("detail-page");
  });

  it("shows a like at once while the server holds the bump, keeps it once committed, and takes back a refused one", async () => {
    await page.getByTestId("tab-tasks").click();
    await poll(() => page.getByTestId("likes").textContent()).toBe("0");

    tasksApp.heldBumps.close();
    await page.getByTestId("like").click();
    await tasksApp.heldBumps.whenWaiting;
    // The server holds the bump uncommitted, and the page already counts it.
    await poll(() => page.getByTestId("likes").textContent()).toBe("1");
    expect(await other.query(api.likes.get, { name: "page" })).toBe(0);
    await screenshot("optimistic-like");
    tasksApp.heldBumps.open();
    await poll(() => other.query(api.likes.get, { name: "page" })).toBe(1);
    expect(await page.getByTestId("likes").textContent()).toBe("1");

    tasksApp.heldBumps.close();
    await page.getByTestId("like-refused").click();
    await tasksApp.heldBumps.whenWaiting;
    await poll(() => page.getByTestId("likes").textContent()).toBe("2");
    tasksApp.heldBumps.open();
    await poll(() => page.getByTestId("likes").textContent()).toBe("1");
    expect(await other.query(api.likes.get, { name: "page" })).toBe(1);
  });
});
