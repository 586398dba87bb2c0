/**
 * Scenario: one contract suite (outboxStoreContract.ts) run against every OutboxStore —
 * the file store here in Node, and the IndexedDB store in Chromium: the suite and the
 * store are bundled with esbuild for the browser and run in a page served from
 * 127.0.0.1 (a secure context, where Web Locks exist). Then the file store's own
 * promises: its quarantined text is kept byte for byte, and a lock left by a process
 * that no longer exists is taken over.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { fileOutbox } from "../../src/client/node.js";
import { outboxStoreContractBreaches } from "./outboxStoreContract.js";

const CHROMIUM = "/usr/bin/chromium";
const browserAvailable = existsSync(CHROMIUM);
if (!browserAvailable && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "cairn-outbox-store-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

describe("the OutboxStore contract", () => {
  it("holds for the file store", async () => {
    const directory = temporaryDirectory();
    expect(await outboxStoreContractBreaches((name) => fileOutbox(join(directory, name)))).toEqual([]);
  });

  it.skipIf(!browserAvailable)("holds for the IndexedDB store in Chromium", async () => {
    const bundled = await build({
      stdin: {
        contents: 'import { outboxStoreContractBreaches } from "./test/client/outboxStoreContract.ts"; import { indexedDbOutbox } from "./src/client/index.ts"; window.breaches = () => outboxStoreContractBreaches((name) => indexedDbOutbox(name));',
        resolveDir: process.cwd(),
        loader: "ts",
      },
      bundle: true,
      platform: "browser",
      format: "iife",
      write: false,
      logLevel: "silent",
    });
    const script = bundled.outputFiles[0]!.text;
    const server = createServer((request, response) => {
      if (request.url === "/contract.js") response.writeHead(200, { "content-type": "text/javascript" }).end(script);
      else response.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><script src="/contract.js"></script>');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    cleanups.push(() => browser.close());
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
    expect(await page.evaluate("window.breaches()")).toEqual([]);
  });
});

describe("the file store", () => {
  it("keeps quarantined text byte for byte beside the outbox, numbering the copies", async () => {
    const path = join(temporaryDirectory(), "outbox");
    for (const [index, text] of ["first \u0000 unreadable", "second ✓"].entries()) {
      const store = fileOutbox(path);
      await store.open();
      await store.save(text);
      expect(await store.quarantine(text)).toBe(`${path}.invalid-${index + 1}`);
      await store.close();
      expect(readFileSync(`${path}.invalid-${index + 1}`, "utf8")).toBe(text);
      expect(existsSync(path)).toBe(false);
    }
  });

  it("takes over a lock left by a process that no longer exists, but not one of a live process", async () => {
    const path = join(temporaryDirectory(), "outbox");
    const exited = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    writeFileSync(`${path}.lock`, JSON.stringify({ pid: Number(exited.stdout), hostname: hostname() }));
    writeFileSync(path, "left behind");
    const store = fileOutbox(path);
    expect(await store.open()).toBe("left behind");
    await store.close();
    expect(existsSync(`${path}.lock`)).toBe(false);

    writeFileSync(`${path}.lock`, JSON.stringify({ pid: process.ppid, hostname: hostname() }));
    await expect(fileOutbox(path).open()).rejects.toMatchObject({ code: "OUTBOX_LOCKED", details: { pid: process.ppid } });
  });
});
