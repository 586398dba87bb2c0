/**
 * Scenario: `cairn dev`'s reload, in one process — an app file edited while a client's
 * subscription is live is loaded afresh and swapped into the running node: the
 * subscription re-runs on the new code at once (no commit needed), later calls run the
 * new functions, a new index is backfilled and usable; an app that fails to compile or a
 * schema change the deployment refuses changes nothing (the old code keeps serving). The
 * app's HTTP routes follow each reload.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createNodeClient } from "../../src/client/node.js";
import { loadApp } from "../../src/functions/index.js";
import { startServer, type RunningNode } from "../../src/server/index.js";

const errorCode = (error: unknown) => (error as { code?: string } | null)?.code;

const SCHEMA = (extra = "") => `
import { defineSchema, defineTable, v } from "cairn";
export const schema = defineSchema({
  notes: defineTable({ text: v.string() })${extra},
});
`;

const NOTES = (listBody: string) => `
import { query, mutation } from "cairn";
import { v } from "cairn";
import { shout } from "../shared/format.js";
export const list = query({ handler: async (ctx) => (await ctx.db.query("notes").take(100)).map((note) => ${listBody}) });
export const add = mutation({ args: { text: v.string() }, handler: async (ctx, { text }) => ctx.db.insert("notes", { text }) });
export const loud = query({ handler: async () => shout("hi") });
`;

const APP = `
import * as notes from "./notes.js";
export { schema } from "./schema.js";
export const functions = { notes };
`;

describe("reloading the app into a running node", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function project() {
    const root = mkdtempSync(join(tmpdir(), "cairn-reload-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, "app"));
    mkdirSync(join(root, "shared"));
    const write = (file: string, text: string) => writeFileSync(join(root, file), text);
    write("app/schema.ts", SCHEMA());
    write("app/notes.ts", NOTES("note.text"));
    write("app/app.ts", APP);
    // A file outside the app's folder: bundled too, so an edit to it reloads as well.
    write("shared/format.ts", `export const shout = (text: string) => text.toUpperCase();`);
    // The embedding API (cairn/server), with cairn serve's defaults: a directory bucket, any free port.
    const node: RunningNode = await startServer({ app: join(root, "app/app.ts"), store: join(root, "bucket"), localDirectory: join(root, "local"), log: () => undefined });
    cleanups.push(() => node.stop());
    const client = createNodeClient(`${node.url.replace(/^http/, "ws")}api/sync`);
    cleanups.push(() => client.close());
    return { root, write, node, client, appFile: join(root, "app/app.ts") };
  }

  it("re-runs a live subscription on the edited code, and runs edited helpers outside the app's folder", async () => {
    const { write, node, client, appFile } = await project();
    await client.mutation({ path: "notes:add" }, { text: "first" });
    const seen: unknown[] = [];
    client.subscribe({ path: "notes:list" }, {}, (value) => seen.push(value));
    await expect.poll(() => seen.at(-1)).toEqual(["first"]);
    expect(await client.query({ path: "notes:loud" }, {})).toBe("HI");

    write("app/notes.ts", NOTES("`${note.text}!`"));
    write("shared/format.ts", `export const shout = (text: string) => text.toUpperCase() + "!!";`);
    await node.reloadApp(await loadApp(appFile));
    await expect.poll(() => seen.at(-1)).toEqual(["first!"]);
    expect(await client.query({ path: "notes:loud" }, {})).toBe("HI!!");
    // Later commits run through the new code too.
    await client.mutation({ path: "notes:add" }, { text: "second" });
    await expect.poll(() => seen.at(-1)).toEqual(["first!", "second!"]);
  });

  it("adds a table and an index on reload, backfilled and queryable without a restart", async () => {
    const { write, node, client, appFile } = await project();
    await client.mutation({ path: "notes:add" }, { text: "b" });
    await client.mutation({ path: "notes:add" }, { text: "a" });
    write("app/schema.ts", SCHEMA(`.index("by_text", ["text"]), tags: defineTable({ name: v.string() })`));
    write(
      "app/notes.ts",
      NOTES("note.text") +
        `export const sorted = query({ handler: async (ctx) => (await ctx.db.query("notes").withIndex("by_text").take(10)).map((note) => note.text) });
         export const tag = mutation({ args: { name: v.string() }, handler: async (ctx, { name }) => ctx.db.insert("tags", { name }) });`,
    );
    await node.reloadApp(await loadApp(appFile));
    await expect.poll(async () => client.query({ path: "notes:sorted" }, {}).catch((error: unknown) => errorCode(error))).toEqual(["a", "b"]);
    expect(typeof (await client.mutation({ path: "notes:tag" }, { name: "x" }))).toBe("string");
  });

  it("serves the reloaded app's HTTP routes: added, changed and removed without a restart", async () => {
    const { write, node, appFile } = await project();
    expect((await fetch(`${node.url}http/hello`)).status).toBe(404);
    const withRoutes = (greeting: string, extra = "") =>
      APP +
      `import { httpAction, httpRouter } from "cairn";
       export const http = httpRouter();
       http.route({ path: "/hello", method: "GET", handler: httpAction(async (ctx) => new Response("${greeting} " + (await ctx.runQuery("notes:list", {})).length)) });
       ${extra}`;
    write("app/app.ts", withRoutes("hi"));
    await node.reloadApp(await loadApp(appFile));
    expect(await (await fetch(`${node.url}http/hello`)).text()).toBe("hi 0");
    write("app/app.ts", withRoutes("hello", `http.route({ path: "/bye", method: "POST", handler: httpAction(async () => new Response("bye")) });`));
    await node.reloadApp(await loadApp(appFile));
    expect(await (await fetch(`${node.url}http/hello`)).text()).toBe("hello 0");
    expect(await (await fetch(`${node.url}http/bye`, { method: "POST" })).text()).toBe("bye");
    write("app/app.ts", APP);
    await node.reloadApp(await loadApp(appFile));
    expect((await fetch(`${node.url}http/hello`)).status).toBe(404);
  });

  it("keeps the old app serving when the new one fails to compile or its schema change is refused", async () => {
    const { write, node, client, appFile } = await project();
    await client.mutation({ path: "notes:add" }, { text: "kept" });

    write("app/notes.ts", "export const list = query({;");
    const compile = await loadApp(appFile).catch((error: unknown) => error as Error);
    expect(errorCode(compile)).toBe("APP_LOAD_FAILED");
    expect((compile as Error).message).toMatch(/notes\.ts:1:\d+: /);

    // Removing a table the deployment has is refused: nothing changes.
    write("app/notes.ts", NOTES("note.text"));
    write("app/schema.ts", `import { defineSchema, defineTable, v } from "cairn";\nexport const schema = defineSchema({ other: defineTable({ x: v.string() }) });`);
    const refused = await node.reloadApp(await loadApp(appFile)).catch((error: unknown) => error);
    expect(errorCode(refused)).toBe("SCHEMA_CHANGE_REFUSED");
    expect(await client.query({ path: "notes:list" }, {})).toEqual(["kept"]);
    await client.mutation({ path: "notes:add" }, { text: "still" });
    expect(await client.query({ path: "notes:list" }, {})).toEqual(["kept", "still"]);
  });
});
