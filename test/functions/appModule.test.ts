/**
 * Scenario: an app module whose `functions` export is flat (`{ list, send }`) instead of
 * grouped in modules (`{ messages: { list, send } }`) — an easy mistake, which used to
 * load as an app with no functions at all. It is refused at load with SCHEMA_INVALID
 * naming the app, the function and the shape to use; the grouped form loads.
 */
import { describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

const schema = defineSchema({ messages: defineTable({ body: v.string() }) });
const { query, mutation } = functionsFor(schema);
const list = query({ args: {}, handler: async (ctx) => ctx.db.query("messages").collect() });
const send = mutation({ args: { body: v.string() }, handler: async (ctx, args) => ctx.db.insert("messages", args) });

describe("loading an app module", () => {
  it("refuses a flat functions export with a message that shows the grouped form", () => {
    let refused: unknown;
    try {
      App.fromModule({ schema, functions: { list, send } }, "app.ts");
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: "SCHEMA_INVALID", details: { source: "app.ts" } });
    expect((refused as Error).message).toMatch(/^app app\.ts: functions\.list is a query, not a module: group functions in modules, e\.g\. `export const functions = \{ messages: \{ list, … \} \}`/);
  });

  it("loads the grouped form", () => {
    expect(App.fromModule({ schema, functions: { messages: { list, send } } }, "app.ts").paths).toEqual(["messages:list", "messages:send"]);
  });
});
