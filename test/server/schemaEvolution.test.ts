/**
 * Scenario: schema evolution on a real node (directory bucket), through what a user does:
 * restart `serve` with a new app, or reload it (`cairn dev`).
 *
 * - A validator change the stored documents fail is refused at start (the node does not
 *   start, nothing is written) and at reload (the old app keeps serving); one they pass is
 *   taken.
 * - A table dropped with an acknowledgement is emptied by the writer after the restart
 *   (the node logs it dropped) and gone from the catalog; queries of the new app work.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { App } from "../../src/functions/App.js";
import { defineSchema, defineTable, functionsFor, v, type AnySchema } from "../../src/functions/index.js";
import { rejection } from "../support/rejection.js";
import { startTestNode } from "./serverHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-schema-evolution-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function appOf(schema: AnySchema): App {
  const { query, mutation } = functionsFor(schema);
  const items = {
    add: mutation({ args: { n: v.any() }, handler: (ctx, { n }) => (ctx.db as never as { insert(t: string, d: object): Promise<string> }).insert("items", { n }) }),
    count: query({ args: {}, handler: async (ctx) => (await (ctx.db as never as { query(t: string): { collect(): Promise<unknown[]> } }).query("items").collect()).length }),
  };
  return App.fromModule({ schema, functions: { items } }, "schema evolution app");
}

async function call(url: string, kind: string, path: string, args: object): Promise<unknown> {
  const answer = await fetch(`${url}api/${kind}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  const body = (await answer.json()) as { value?: unknown };
  if (answer.status !== 200) throw new Error(JSON.stringify(body));
  return body.value;
}

describe("schema evolution on a node", () => {
  it("refuses a validator change the stored documents fail, takes one they pass, and drops an acknowledged table", { timeout: 60_000 }, async () => {
    const directory = join(root, "node");
    const v1 = defineSchema({ items: defineTable({ n: v.number() }), old: defineTable({ x: v.number() }) });
    let started = await startTestNode({ app: appOf(v1) }, { directory, keepDirectory: true });
    for (let n = 0; n < 20; n++) await call(started.node.url, "mutation", "items:add", { n });
    // Reload with a validator every document fails: refused, the old app serves on.
    const stringN = defineSchema({ items: defineTable({ n: v.string() }), old: v1.tables.old });
    expect(await rejection(started.node.reloadApp(appOf(stringN)))).toMatchObject({ code: "SCHEMA_CHANGE_REFUSED" });
    await call(started.node.url, "mutation", "items:add", { n: 20 });
    await started.close();

    // Start with it: refused before the node serves.
    expect(await rejection(startTestNode({ app: appOf(stringN) }, { directory, keepDirectory: true }))).toMatchObject({ code: "SCHEMA_CHANGE_REFUSED" });

    // Widened (every document passes) and `old` dropped with an acknowledgement.
    const lines: string[] = [];
    const v2 = defineSchema({ items: defineTable({ n: v.union(v.number(), v.string()) }) }, { drop: { tables: ["old"] } });
    started = await startTestNode({ app: appOf(v2), log: (line) => lines.push(line) }, { directory, keepDirectory: true });
    try {
      await vi.waitFor(() => expect(lines).toContain("table old is dropped"), { timeout: 20_000, interval: 50 });
      expect(await call(started.node.url, "query", "items:count", {})).toBe(21);
      await call(started.node.url, "mutation", "items:add", { n: "a string now" });
    } finally {
      await started.close();
    }
  });
});
