/**
 * Scenario: `cairn dev` as a developer runs it — a real process in a project that
 * `cairn init` scaffolded. A function edited while a client's subscription is live is
 * reloaded into the running node and the subscription shows the new code's result; a
 * type error is printed as file:line:column (tsc --watch) while the code still reloads;
 * code that fails to compile and a schema change the deployment refuses are printed and
 * the last good version keeps serving (its data and subscriptions intact); an edit to the
 * page rebuilds it and an open page (Chromium) reloads itself; SIGTERM stops it cleanly.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/index.js";
import { runCairn } from "../support/runCairn.js";

const CHROMIUM = "/usr/bin/chromium";
const browserAvailable = existsSync(CHROMIUM);
if (!browserAvailable && process.env["CAIRN_TEST_BROWSER_REQUIRED"] === "1") throw new Error(`${CHROMIUM} is missing and CAIRN_TEST_BROWSER_REQUIRED=1`);
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const TSX_LOADER = pathToFileURL(join(REPO, "node_modules/tsx/dist/loader.mjs")).href;

interface Task {
  readonly text: string;
  readonly done: boolean;
}

describe("cairn dev", () => {
  let project: string;
  let dev: ChildProcess;
  let output = "";
  let client: CairnClient;
  let url: string;
  const seen: Task[][] = [];

  /** Resolves once what the process printed after `mark` (an offset into its output) matches; rejects with the output if it exits first. */
  const printed = (pattern: RegExp, mark: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output.slice(mark))) return resolve();
        if (dev.exitCode !== null && !pattern.test(output.slice(mark))) return reject(new Error(`cairn dev exited (${dev.exitCode}) before printing ${pattern}:\n${output}`));
        setTimeout(check, 50);
      };
      check();
    });
  const edit = (file: string, change: (text: string) => string) => writeFileSync(join(project, file), change(readFileSync(join(project, file), "utf8")));

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "cairn-dev-"));
    const init = await runCairn(["init", project]);
    expect(init.code, init.stderr).toBe(0);
    // The project's own TypeScript, as `npm install` puts it there (the scaffold's
    // devDependency), and "cairn" typed from this checkout's sources (which need Node's
    // types and NodeNext resolution, as in templates/tsconfig.check.json): Cairn is not
    // installed in this project, its code is the running checkout's.
    mkdirSync(join(project, "node_modules"));
    symlinkSync(join(REPO, "node_modules/typescript"), join(project, "node_modules/typescript"));
    symlinkSync(join(REPO, "node_modules/@types"), join(project, "node_modules/@types"));
    const tsconfig = JSON.parse(readFileSync(join(project, "tsconfig.json"), "utf8")) as { compilerOptions: Record<string, unknown> };
    Object.assign(tsconfig.compilerOptions, {
      module: "NodeNext",
      moduleResolution: "NodeNext",
      types: ["node"],
      paths: { cairn: [join(REPO, "src/package/index.ts")], "cairn/client": [join(REPO, "src/package/client.ts")] },
    });
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify(tsconfig));
    dev = spawn(process.execPath, ["--import", TSX_LOADER, join(REPO, "src/cli/main.ts"), "dev", "--port", "0"], {
      cwd: project,
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    dev.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    dev.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await printed(/serving at http:\/\/\S+\//, 0);
    await printed(/types: no errors/, 0);
    url = /serving at (http:\/\/\S+\/)/.exec(output)![1]!;
    client = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`);
    client.subscribe({ path: "tasks:list" }, {}, (tasks) => seen.push(tasks as Task[]));
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    if (dev !== undefined && dev.exitCode === null) {
      dev.kill("SIGKILL");
    }
    rmSync(project, { recursive: true, force: true });
  });

  it("prints a one-time dashboard login link, never the admin key it keeps in the local directory", async () => {
    const link = /dashboard: (http:\/\/\S+\/_dashboard#login=([0-9a-f]+))/.exec(output);
    expect(link, output).not.toBeNull();
    const key = readFileSync(join(project, ".cairn/local/admin-key"), "utf8").trim();
    expect(key.length).toBeGreaterThanOrEqual(32);
    expect(output).not.toContain(key);
    const exchange = () => fetch(new URL("/api/admin/login", url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: link![2] }) });
    const first = await exchange();
    expect(await first.json()).toEqual({ key });
    // Spent: the same link logs nobody in again.
    const second = await exchange();
    expect(second.status).toBe(403);
    const tables = await fetch(new URL("/api/admin/tables", url), { headers: { authorization: `Admin ${key}` } });
    expect(tables.status).toBe(200);
  });

  it("reloads an edited function into the running node: the live subscription shows the new code's result", async () => {
    await client.mutation({ path: "tasks:add" }, { text: "write docs" });
    await expect.poll(() => seen.at(-1)?.map((task) => task.text)).toEqual(["write docs"]);
    const mark = output.length;
    edit("cairn/tasks.ts", (text) =>
      text.replace(`ctx.db.query("tasks").take(200)`, `(await ctx.db.query("tasks").take(200)).map((task) => ({ ...task, text: task.text.toUpperCase() }))`),
    );
    await expect.poll(() => seen.at(-1)?.map((task) => task.text), { timeout: 30_000 }).toEqual(["WRITE DOCS"]);
    await printed(/app reloaded: 4 function\(s\)/, mark);
  });

  it("prints a type error as file:line:column, and still reloads what esbuild compiles", async () => {
    const mark = output.length;
    edit("cairn/tasks.ts", (text) => `${text}\nexport const answer: number = "forty-two";\n`);
    const line = readFileSync(join(project, "cairn/tasks.ts"), "utf8").split("\n").findIndex((text) => text.includes("forty-two")) + 1;
    await printed(new RegExp(`type error: cairn/tasks\\.ts:${line}:14: Type 'string' is not assignable to type 'number'\\. \\(TS2322\\)`), mark);
    await printed(/types: 1 error\(s\)/, mark);
    const fixed = output.length;
    edit("cairn/tasks.ts", (text) => text.replace(`export const answer: number = "forty-two";\n`, ""));
    await printed(/types: no errors/, fixed);
  });

  it("keeps the last good version serving when the code fails to compile", async () => {
    const mark = output.length;
    edit("cairn/tasks.ts", (text) => `${text}\nexport const broken = ;\n`);
    await printed(/the app failed to load; the last good version keeps serving:\napp .*app\.ts failed to compile:\n {2}cairn\/tasks\.ts:\d+:\d+: /, mark);
    // The old code still runs: a mutation lands and the subscription (old code: upper case) shows it.
    await client.mutation({ path: "tasks:add" }, { text: "still serving" });
    await expect.poll(() => seen.at(-1)?.map((task) => task.text)).toEqual(["WRITE DOCS", "STILL SERVING"]);
    const fixed = output.length;
    edit("cairn/tasks.ts", (text) => text.replace("\nexport const broken = ;\n", ""));
    await printed(/app reloaded/, fixed);
  });

  it("prints a schema change the deployment refuses and keeps the old schema and data", async () => {
    const mark = output.length;
    edit("cairn/schema.ts", (text) => text.replace("tasks: defineTable", "todos: defineTable"));
    await printed(/the deployment refused the new app \[SCHEMA_CHANGE_REFUSED\]; the last good version keeps serving:\n.*table tasks/, mark);
    expect((await client.query({ path: "tasks:list" }, {})) as Task[]).toHaveLength(2);
    const fixed = output.length;
    edit("cairn/schema.ts", (text) => text.replace("todos: defineTable", "tasks: defineTable"));
    await printed(/app reloaded/, fixed);
  });

  it.skipIf(!browserAvailable)("rebuilds the page when it changes, and an open page reloads itself", async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await expect.poll(() => page.locator("#tasks li span").allTextContents(), { timeout: 15_000 }).toEqual(["WRITE DOCS", "STILL SERVING"]);
      expect(await page.title()).toBe("Tasks");
      const mark = output.length;
      edit("web/main.ts", (text) => `${text}\ndocument.title = "Tasks (edited)";\n`);
      await printed(/page built: assets\/main-\w+\.js \(open pages reload\)/, mark);
      // The page notices the new build by itself and loads it.
      await expect.poll(() => page.title(), { timeout: 15_000 }).toBe("Tasks (edited)");
      await expect.poll(() => page.locator("#tasks li span").allTextContents(), { timeout: 15_000 }).toEqual(["WRITE DOCS", "STILL SERVING"]);
    } finally {
      await browser.close();
    }
  });

  it("takes serve's auth flags, checked before anything opens", async () => {
    const refused = await runCairn(["dev", "--app", join(project, "cairn/app.ts"), "--local", join(project, "other-local"), "--jwt-secret", "too short"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\[INVALID_ARGUMENT\] the JWT secret must be at least 32 bytes/);
  });

  it("stops on SIGTERM, with exit code 0", async () => {
    await client.close();
    const exited = new Promise<number | null>((done) => dev.once("exit", (code) => done(code)));
    dev.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output).toMatch(/cairn: stopped\n$/);
  });
});
