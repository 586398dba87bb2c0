/**
 * Scenario: apps loaded from files as `cairn serve` and `cairn dev` load them (compiled
 * by esbuild, Cairn shared, the app's own code bundled afresh on every load). A
 * JavaScript app loads as well as a TypeScript one; an app's packages and JSON files
 * load; every load evaluates the app's current code; a mistaken `cairn/…` import, a
 * missing import and a throw at load are each APP_LOAD_FAILED naming what is wrong; and
 * no temporary bundle is left behind, whether the load worked or not.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { loadApp } from "../../src/functions/index.js";

const root = mkdtempSync(join(tmpdir(), "cairn-load-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
// The apps' own dependencies, as their project's `npm install` puts them (here: zod, from this checkout).
mkdirSync(join(root, "node_modules"));
symlinkSync(join(fileURLToPath(new URL("../../node_modules/zod", import.meta.url))), join(root, "node_modules", "zod"));

let folders = 0;
function app(files: Record<string, string>): string {
  const folder = join(root, `app-${++folders}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(folder, name, ".."), { recursive: true });
    writeFileSync(join(folder, name), text);
  }
  return folder;
}

const failure = (loading: Promise<unknown>) => loading.then(() => null, (error: unknown) => error as Error & { code?: string });

describe("loadApp", () => {
  it("loads a JavaScript app, its packages and its JSON", async () => {
    const folder = app({
      "app.mjs": `
        import { defineSchema, defineTable, query, v } from "cairn";
        import { z } from "zod";
        import limits from "./limits.json" with { type: "json" };
        export const schema = defineSchema({ notes: defineTable({ text: v.string() }) });
        const max = z.number().parse(limits.max);
        export const functions = { notes: { max: query({ handler: async () => max }) } };`,
      "limits.json": JSON.stringify({ max: 7 }),
    });
    const loaded = await loadApp(join(folder, "app.mjs"));
    expect(loaded.paths).toEqual(["notes:max"]);
    expect(loaded.source).toBe(join(folder, "app.mjs"));
  });

  it("evaluates the app's current code on every load, helpers included", async () => {
    const folder = app({
      "app.ts": `import { defineSchema, defineTable, query, v } from "cairn";
        import { names } from "./names.js";
        export const schema = defineSchema({ notes: defineTable({ text: v.string() }) });
        export const functions = { notes: Object.fromEntries(names.map((name) => [name, query({ handler: async () => name })])) };`,
      "names.ts": `export const names = ["first"];`,
    });
    expect((await loadApp(join(folder, "app.ts"))).paths).toEqual(["notes:first"]);
    writeFileSync(join(folder, "names.ts"), `export const names = ["first", "second"];`);
    expect((await loadApp(join(folder, "app.ts"))).paths).toEqual(["notes:first", "notes:second"]);
  });

  it("names the problem: an unknown cairn entry point, a missing import, a throw at load; and leaves no bundle behind", async () => {
    // This process's temporary directory for these loads alone (test files run in processes of their own).
    const temporary = join(root, "tmp");
    mkdirSync(temporary);
    const machineTemporary = process.env["TMPDIR"];
    process.env["TMPDIR"] = temporary;
    onTestFinished(() => {
      if (machineTemporary === undefined) delete process.env["TMPDIR"];
      else process.env["TMPDIR"] = machineTemporary;
    });
    const unknownEntry = app({ "app.ts": `import { x } from "cairn/internals";\nexport const schema = x;` });
    const entry = await failure(loadApp(join(unknownEntry, "app.ts")));
    expect(entry?.code).toBe("APP_LOAD_FAILED");
    expect(entry?.message).toMatch(/app\.ts:1:\d+: "cairn\/internals" is not an entry point of cairn \(it has cairn, cairn\/client, cairn\/client\/node, cairn\/react, cairn\/server\)/);

    const missing = app({ "app.ts": `import { helper } from "./helper.js";\nexport const schema = helper;` });
    const notFound = await failure(loadApp(join(missing, "app.ts")));
    expect(notFound?.code).toBe("APP_LOAD_FAILED");
    expect(notFound?.message).toMatch(/failed to compile:\n {2}.*app\.ts:1:\d+: Could not resolve "\.\/helper\.js"/);

    const throws = app({ "app.ts": `throw new Error("no database URL configured");` });
    const thrown = await failure(loadApp(join(throws, "app.ts")));
    expect(thrown?.code).toBe("APP_LOAD_FAILED");
    expect(thrown?.message).toMatch(/app\.ts failed to load: no database URL configured/);

    const absent = await failure(loadApp(join(root, "nowhere.ts")));
    expect(absent?.message).toMatch(/nowhere\.ts: no such file/);
    expect(readdirSync(temporary)).toEqual([]);
  });
});
