/**
 * Scenario: the newcomer's path, automated. The project is packed (`npm pack`, which
 * builds dist/), the tarball installed into a fresh folder, an app scaffolded there with
 * the installed `cairn init`, its page built with `cairn build`, type-checked against the
 * installed package's declarations, and served with `cairn serve --static dist` — all on
 * plain Node, no tsx. In Chromium the page lists tasks live: one added in the page shows
 * up, one added by another client (the installed `cairn/client/node`) appears by itself,
 * a toggle sticks. The tarball holds compiled code and declarations only, and every entry
 * point of the exports map loads.
 *
 * The install runs with --ignore-scripts and takes better-sqlite3's native binary from
 * this checkout: this machine reaches only the npm registry, so the binary would be
 * compiled from source (~50 s) rather than downloaded as on a normal machine. Everything
 * else is installed as a user would get it.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CHROMIUM = "/usr/bin/chromium";
const browserAvailable = existsSync(CHROMIUM);
if (!browserAvailable && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);

const root = mkdtempSync(join(tmpdir(), "cairn-package-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

const npm = (args: readonly string[], cwd: string) => run("npm", [...args], { cwd, env: { ...process.env, npm_config_fund: "false", npm_config_audit: "false", npm_config_update_notifier: "false" }, maxBuffer: 64 << 20 });

/** `cairn serve` (the installed bin) in `cwd`, resolved with its URL once it serves; `stop` sends SIGTERM and resolves with the exit code. */
async function serveInstalled(bin: string, cwd: string, args: readonly string[]) {
  const serve = spawn(bin, ["serve", ...args, "--port", "0"], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  children.push(serve);
  let output = "";
  serve.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  serve.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await expect.poll(() => output, { timeout: 60_000, interval: 100 }).toMatch(/serving at http:\/\/\S+\//);
  return {
    url: /serving at (http:\/\/\S+\/)/.exec(output)![1]!,
    output: () => output,
    stop: () => {
      const exited = new Promise<number | null>((done) => serve.once("exit", (code) => done(code)));
      serve.kill("SIGTERM");
      return exited;
    },
  };
}

/** A 390 px wide Chromium page collecting its errors, closed (with the browser) after `use`. */
async function withPhonePage(use: (page: Page, errors: string[]) => Promise<void>): Promise<void> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  try {
    const page = await browser.newPage({ viewport: { width: 390, height: 700 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await use(page, errors);
  } finally {
    await browser.close();
  }
}

describe("the package, installed into a fresh project", () => {
  const project = join(root, "my-app");
  const bin = join(project, "node_modules", ".bin", "cairn");
  let tarballPath = "";

  it("packs compiled code and declarations only, installs, and every entry point loads", async () => {
    const packed = await npm(["pack", "--json", "--pack-destination", root], REPO);
    const [tarball] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as { filename: string; size: number; unpackedSize: number; files: { path: string }[] }[];
    const paths = tarball!.files.map((file) => file.path);
    console.log(`npm pack: ${tarball!.filename}, ${(tarball!.size / 1024).toFixed(0)} KiB packed, ${(tarball!.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${paths.length} files`);
    expect(paths.filter((path) => /^(src|test|bench|scripts)\//.test(path) || /\.test\.|\.tsbuildinfo$/.test(path))).toEqual([]);
    expect(paths).toContain("dist/cli/main.js");
    expect(paths).toContain("dist/package/index.d.ts");
    expect(paths).toContain("templates/app/cairn/app.ts");
    // The dashboard prebuilt: its page and bundles, not its sources.
    expect(paths).toEqual(expect.arrayContaining(["dist/dashboard/index.html", "dist/dashboard/app.js", "dist/dashboard/app.css"]));
    expect(paths.filter((path) => path.startsWith("dist/dashboard/") && !/\/(index\.html|app\.js|app\.css)$/.test(path))).toEqual([]);

    tarballPath = join(root, tarball!.filename);
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "my-app", private: true, type: "module" }));
    await npm(["install", "--ignore-scripts", "--prefer-offline", join(root, tarball!.filename)], project);
    const native = "node_modules/better-sqlite3/build/Release";
    mkdirSync(join(project, native), { recursive: true });
    copyFileSync(join(REPO, native, "better_sqlite3.node"), join(project, native, "better_sqlite3.node"));
    const installed = readdirSync(join(project, "node_modules"));
    // Runtime dependencies only: no test or build tool came with it.
    for (const tool of ["vitest", "tsx", "typescript", "playwright-core", "minio", "fast-check", "react", "preact", "uplot"]) expect(installed).not.toContain(tool);

    const entries = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const names = {};
         for (const entry of ["cairn", "cairn/client", "cairn/client/node", "cairn/server"]) names[entry] = Object.keys(await import(entry));
         console.log(JSON.stringify(names));`,
      ],
      { cwd: project },
    );
    const names = JSON.parse(entries.stdout) as Record<string, string[]>;
    expect(names["cairn"]).toEqual(expect.arrayContaining(["defineSchema", "defineTable", "v", "query", "mutation", "action", "functionsFor", "AppError"]));
    expect(names["cairn"]).not.toContain("FunctionRuntime");
    expect(names["cairn/client"]).toEqual(expect.arrayContaining(["CairnClient", "apiOf", "indexedDbOutbox"]));
    expect(names["cairn/client/node"]).toEqual(expect.arrayContaining(["createNodeClient", "fileOutbox"]));
    expect(names["cairn/server"]).toEqual(expect.arrayContaining(["startNode", "loadApp", "openObjectStore"]));
  }, 240_000);

  it("scaffolds with cairn init, builds the page, and the app type-checks against the installed declarations", async () => {
    const init = await run(bin, ["init", "--force"], { cwd: project });
    expect(init.stdout).toMatch(/created an app/);
    // A second project scaffolded from this one depends on the same tarball (the registry's "cairn" is another package).
    await run(bin, ["init", join(root, "second-app")], { cwd: project });
    const second = JSON.parse(readFileSync(join(root, "second-app", "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(second.dependencies["cairn"]).toBe(`file:${tarballPath}`);
    const build = await run(bin, ["build"], { cwd: project });
    expect(build.stdout).toMatch(/built .*dist: index\.html, assets\/main-\w+\.js/);
    // The scaffold's devDependency, TypeScript, from this checkout; the types of cairn are the installed package's.
    symlinkSync(join(REPO, "node_modules/typescript"), join(project, "node_modules/typescript"));
    const typecheck = await run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", project], { cwd: project }).catch((error: { stdout: string }) => error);
    expect(typecheck.stdout).toBe("");
  }, 120_000);

  it.skipIf(!browserAvailable)("serves the page and the app with plain node; the page lists tasks live in Chromium", async () => {
    const serve = await serveInstalled(bin, project, ["--app", "cairn/app.ts", "--static", "dist"]);
    expect(serve.output()).not.toMatch(/tsx/);
    const url = serve.url;
    // The dashboard is served from the package's prebuilt files (Preact and uPlot are not installed).
    const dashboardScript = await fetch(`${url}_dashboard/app.js`);
    expect(dashboardScript.status).toBe(200);
    expect(Buffer.from(await dashboardScript.arrayBuffer()).equals(readFileSync(join(project, "node_modules/cairn/dist/dashboard/app.js")))).toBe(true);
    await withPhonePage(async (page, errors) => {
      await page.goto(`${url}some/route/of/the/app`);
      await page.locator("#text").fill("buy milk");
      await page.locator("#add button").click();
      const tasks = () => page.locator("#tasks li span").allTextContents();
      await expect.poll(tasks, { timeout: 15_000 }).toEqual(["buy milk"]);

      // Another client — the installed package's Node client — adds one: the page shows it by itself.
      const other = `import { createNodeClient } from "cairn/client/node";
        const client = createNodeClient(${JSON.stringify(`${url.replace(/^http/, "ws")}api/sync`)});
        await client.mutation({ path: "tasks:add" }, { text: "call ada" });
        await client.close();`;
      await run(process.execPath, ["--input-type=module", "-e", other], { cwd: project });
      await expect.poll(tasks, { timeout: 15_000 }).toEqual(["buy milk", "call ada"]);

      await page.locator("#tasks li input").first().check();
      await expect.poll(() => page.locator("#tasks li").first().getAttribute("class"), { timeout: 15_000 }).toBe("done");
      await page.reload();
      await expect.poll(() => page.locator("#tasks li.done span").allTextContents(), { timeout: 15_000 }).toEqual(["buy milk"]);
      mkdirSync(join(REPO, "test-artifacts"), { recursive: true });
      await page.screenshot({ path: join(REPO, "test-artifacts", "package-scaffold-390.png") });
      expect(errors).toEqual([]);
    });
    expect(await serve.stop()).toBe(0);
  }, 120_000);

  it.skipIf(!browserAvailable)("scaffolds a React page with cairn init --react that builds, type-checks and runs over the installed cairn/react", async () => {
    // React as `npm install` would put it (the scaffold's dependencies), from this checkout.
    for (const name of ["react", "react-dom", "scheduler", "@types/react", "@types/react-dom", "csstype"]) {
      mkdirSync(join(project, "node_modules", name, ".."), { recursive: true });
      if (!existsSync(join(project, "node_modules", name))) symlinkSync(join(REPO, "node_modules", name), join(project, "node_modules", name));
    }
    const app = join(project, "react-page");
    await run(bin, ["init", "--react", app], { cwd: project });
    const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["cairn", "react", "react-dom"]);
    expect(Object.keys(manifest.devDependencies).sort()).toEqual(["@types/react", "@types/react-dom", "typescript"]);
    await run(bin, ["build", "--web", join(app, "web"), "--out", join(app, "dist")], { cwd: project });
    const typecheck = await run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", app], { cwd: project }).catch((error: { stdout: string }) => error);
    expect(typecheck.stdout).toBe("");

    const serve = await serveInstalled(bin, app, ["--app", "cairn/app.ts", "--static", "dist"]);
    await withPhonePage(async (page, errors) => {
      await page.goto(serve.url);
      await page.locator("#text").fill("learn react");
      await page.locator("#add button").click();
      await expect.poll(() => page.locator("#tasks li span").allTextContents(), { timeout: 15_000 }).toEqual(["learn react"]);
      await page.locator("#tasks li input").first().check();
      await expect.poll(() => page.locator("#tasks li").first().getAttribute("class"), { timeout: 15_000 }).toBe("done");
      await page.screenshot({ path: join(REPO, "test-artifacts", "package-react-scaffold-390.png") });
      expect(errors).toEqual([]);
    });
    expect(await serve.stop()).toBe(0);
  }, 120_000);

  it("starts a node inside a program of the project's own with cairn/server, on the same store", async () => {
    const program = `import { startServer } from "cairn/server";
      import { createNodeClient } from "cairn/client/node";
      const node = await startServer({ app: "cairn/app.ts", log: () => {} });
      const client = createNodeClient(node.url.replace(/^http/, "ws") + "api/sync");
      await client.mutation({ path: "tasks:add" }, { text: "from my program" });
      const tasks = await client.query({ path: "tasks:list" }, {});
      await client.close();
      await node.stop();
      console.log(JSON.stringify(tasks.map((task) => task.text)));`;
    const result = await run(process.execPath, ["--input-type=module", "-e", program], { cwd: project });
    // The tasks the page and the other client added before, on the store in .cairn/: the same deployment.
    expect(JSON.parse(result.stdout)).toEqual(["buy milk", "call ada", "from my program"]);
  }, 120_000);
});

