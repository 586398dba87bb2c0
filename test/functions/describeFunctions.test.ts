/**
 * Scenario: the admin API describes an app. A small chat app (users, channels, messages
 * sharded by channel) has public and internal queries, mutations and actions, with ids,
 * optional fields, unions, arrays, records and literals in their arguments and results,
 * functions with no arguments or no result validator, and validators zod cannot put in
 * JSON Schema (bytes, int64, any, a custom check, a transform's output). Each function
 * must come out with its kind, visibility and validators as JSON Schema, ids as
 * `cairn-id` strings of their table, the unrepresentable as `{}`, none throwing; and the
 * deployment's tables with their indexes, system ones flagged, states as the catalog
 * records them (an index added later is backfilling), with document counts or without.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { App } from "../../src/functions/App.js";
import { Catalog, planCatalog } from "../../src/functions/catalog.js";
import {
  action,
  defineSchema,
  defineTable,
  describeFunctions,
  describeTables,
  functionsFor,
  internalAction,
  type FunctionInfo,
  v,
} from "../../src/functions/index.js";
import type { SchemaCatalog } from "../../src/manifest/index.js";

const userFields = {
  name: v.string(),
  email: v.optional(v.string()),
  role: v.union(v.literal("admin"), v.literal("member")),
  avatar: v.optional(v.bytes()),
};

const schema = defineSchema({
  users: defineTable(userFields).index("by_email", ["email"]),
  channels: defineTable({ title: v.string(), owner: v.id("users") }),
  messages: defineTable({
    channel: v.id("channels"),
    author: v.id("users"),
    body: v.string(),
    reactions: z.record(z.string(), v.number()),
  })
    .index("by_channel", ["channel"])
    .shardKey("channel"),
});

const { query, mutation, internalQuery, internalMutation } = functionsFor(schema);

const messages = {
  list: query({
    args: { channel: v.id("channels"), limit: v.optional(v.number()) },
    returns: v.array(v.object({ _id: v.id("messages"), body: v.string(), author: v.id("users") })),
    handler: async () => [],
  }),
  send: mutation({
    args: {
      channel: v.id("channels"),
      body: v.string(),
      mentions: v.array(v.id("users")),
      reactions: z.record(z.string(), v.number()),
      replyTo: v.optional(v.union(v.id("messages"), v.null())),
    },
    returns: v.id("messages"),
    shardBy: "channel",
    handler: async () => null as never,
  }),
  /** No args, no result validator. */
  count: query({ handler: async () => 0 }),
  purge: internalMutation({
    args: { before: v.int64(), payload: v.optional(v.any()) },
    handler: async () => null,
  }),
};

const users = {
  /** `args: {}` takes nothing, exactly as no `args` does. */
  me: query({ args: {}, returns: v.union(v.object(userFields), v.null()), handler: async () => null }),
  byEmail: internalQuery({ args: { email: v.string() }, returns: v.optional(v.id("users")), handler: async () => undefined }),
  /** Validators zod cannot represent, or fails on. */
  odd: internalQuery({
    args: {
      even: z.custom<number>((input) => typeof input === "number" && input % 2 === 0),
      throwing: z.custom<string>(() => {
        throw new Error("a check that throws");
      }),
      length: z.string().transform((text) => text.length),
    },
    returns: z.string().transform((text) => text.length),
    handler: async () => 0,
  }),
};

const jobs = {
  nightly: internalAction({ args: { dryRun: v.boolean() }, handler: async () => "done" }),
  ping: action({ handler: async () => "pong" }),
};

/** Returns a value zod's converter cannot even read: the list must go on without its shape. */
const broken = {
  notAValidator: query({ returns: { not: "a zod schema" } as unknown as z.ZodType<unknown>, handler: async () => null }),
};

const app = App.fromModule({ schema, functions: { messages, users, jobs, broken } });

const idOf = (table: string) => ({ type: "string", format: "cairn-id", table });

function byPath(infos: readonly FunctionInfo[]): Map<string, FunctionInfo> {
  return new Map(infos.map((info) => [info.path, info]));
}

describe("describeFunctions", () => {
  const described = describeFunctions(app);
  const info = byPath(described);

  it("lists every function in path order with its kind and visibility", () => {
    expect(described.map(({ path, kind, visibility }) => [path, kind, visibility])).toEqual([
      ["broken:notAValidator", "query", "public"],
      ["jobs:nightly", "action", "internal"],
      ["jobs:ping", "action", "public"],
      ["messages:count", "query", "public"],
      ["messages:list", "query", "public"],
      ["messages:purge", "mutation", "internal"],
      ["messages:send", "mutation", "public"],
      ["users:byEmail", "query", "internal"],
      ["users:me", "query", "public"],
      ["users:odd", "query", "internal"],
    ]);
  });

  it("gives argument validators as JSON Schema: ids, optional fields, unions, arrays, records", () => {
    expect(info.get("messages:send")!.args).toEqual({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        channel: idOf("channels"),
        body: { type: "string" },
        mentions: { type: "array", items: idOf("users") },
        reactions: { type: "object", propertyNames: { type: "string" }, additionalProperties: { type: "number" } },
        replyTo: { anyOf: [idOf("messages"), { type: "null" }] },
      },
      required: ["channel", "body", "mentions", "reactions"],
      additionalProperties: false,
    });
    expect(info.get("messages:list")!.args).toMatchObject({
      properties: { channel: idOf("channels"), limit: { type: "number" } },
      required: ["channel"],
    });
    expect(info.get("jobs:nightly")!.args).toMatchObject({ properties: { dryRun: { type: "boolean" } }, required: ["dryRun"] });
  });

  it("gives result validators as JSON Schema", () => {
    expect(info.get("messages:send")!.returns).toEqual({ $schema: "https://json-schema.org/draft/2020-12/schema", ...idOf("messages") });
    expect(info.get("messages:list")!.returns).toMatchObject({
      type: "array",
      items: {
        type: "object",
        properties: { _id: idOf("messages"), body: { type: "string" }, author: idOf("users") },
        required: ["_id", "body", "author"],
        additionalProperties: false,
      },
    });
    expect(info.get("users:me")!.returns).toMatchObject({
      anyOf: [
        {
          type: "object",
          properties: {
            name: { type: "string" },
            email: { type: "string" },
            role: { anyOf: [{ type: "string", const: "admin" }, { type: "string", const: "member" }] },
            avatar: {},
          },
          required: ["name", "role"],
        },
        { type: "null" },
      ],
    });
    expect(info.get("users:byEmail")!.returns).toMatchObject(idOf("users"));
  });

  it("gives null for no arguments and no result validator", () => {
    for (const path of ["messages:count", "jobs:ping", "users:me"]) expect(info.get(path)!.args, path).toBeNull();
    for (const path of ["messages:count", "jobs:ping", "messages:purge", "jobs:nightly"]) expect(info.get(path)!.returns, path).toBeNull();
  });

  it("describes what JSON Schema cannot hold as any value, and never throws", () => {
    expect(info.get("messages:purge")!.args).toMatchObject({ properties: { before: {}, payload: {} }, required: ["before"] });
    const odd = info.get("users:odd")!;
    // A custom check is no id and no number; the transform takes a string and gives a number zod cannot name.
    expect(odd.args).toMatchObject({ properties: { even: {}, throwing: {}, length: { type: "string" } }, required: ["even", "throwing", "length"] });
    expect(odd.returns).toEqual({ $schema: "https://json-schema.org/draft/2020-12/schema" });
    expect(info.get("broken:notAValidator")!.returns).toEqual({});
  });

  it("is plain JSON", () => {
    expect(JSON.parse(JSON.stringify(described))).toEqual(described);
  });
});

describe("describeTables", () => {
  const first = planCatalog(schema, null)!;
  // The app later adds an index to a table that exists: the deployment backfills it.
  const grown = defineSchema({ ...schema.tables, users: defineTable(userFields).index("by_email", ["email"]).index("by_name", ["name"]) });
  const stored: SchemaCatalog = { ...first, version: 1, nonce: "n" };
  const catalog = Catalog.bind(grown, planCatalog(grown, stored)!);

  it("lists each table with its indexes, system ones flagged, states as recorded", () => {
    // Cairn's system tables come last, routed by id.
    expect(describeTables(catalog).slice(-2)).toMatchObject([
      { name: "_scheduled_functions", number: 4, shardKey: "_id" },
      { name: "_storage", number: 5, shardKey: "_id" },
    ]);
    expect(describeTables(catalog).slice(0, -2)).toEqual([
      {
        name: "users",
        number: 1,
        shardKey: null,
        indexes: [
          { name: "by_id", fields: ["_id"], state: "ready", system: true },
          { name: "by_creation", fields: ["_creationTime", "_id"], state: "ready", system: true },
          { name: "by_email", fields: ["email"], state: "ready", system: false },
          { name: "by_name", fields: ["name"], state: "backfilling", system: false },
        ],
      },
      {
        name: "channels",
        number: 2,
        shardKey: null,
        indexes: [
          { name: "by_id", fields: ["_id"], state: "ready", system: true },
          { name: "by_creation", fields: ["_creationTime", "_id"], state: "ready", system: true },
        ],
      },
      {
        name: "messages",
        number: 3,
        shardKey: "channel",
        indexes: [
          { name: "by_id", fields: ["_id"], state: "ready", system: true },
          { name: "by_creation", fields: ["_creationTime", "_id"], state: "ready", system: true },
          { name: "by_channel", fields: ["channel"], state: "ready", system: false },
        ],
      },
    ]);
  });

  it("adds document counts by table name when given (a table left out has none)", () => {
    const tables = describeTables(catalog, new Map([["users", 3], ["messages", 120], ["nonexistent", 9]]));
    expect(tables.map((table) => [table.name, table.documents])).toEqual([
      ["users", 3],
      ["channels", 0],
      ["messages", 120],
      ["_scheduled_functions", 0],
      ["_storage", 0],
    ]);
    expect(describeTables(catalog).every((table) => !("documents" in table))).toBe(true);
  });

  it("shows an index's state as it is now", () => {
    const fresh = Catalog.bind(grown, planCatalog(grown, stored)!);
    fresh.table("users").indexes.get("by_name")!.state = "ready";
    expect(describeTables(fresh)[0]!.indexes.map((index) => index.state)).toEqual(["ready", "ready", "ready", "ready"]);
  });
});
