/**
 * The app the file storage tests serve: upload URLs from a mutation, files kept in a
 * table by their storage id, URLs and metadata from queries (live), deletion from a
 * mutation, and an action that stores bytes it makes and reads a file back.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  attachments: defineTable({ name: v.string(), file: v.id("_storage") }).index("by_name", ["name"]),
});

const { query, mutation, action } = functionsFor(schema);

const files = {
  uploadUrl: mutation({ args: {}, handler: (ctx) => ctx.storage.generateUploadUrl() }),
  attach: mutation({
    args: { name: v.string(), file: v.id("_storage") },
    handler: async (ctx, { name, file }) => {
      await ctx.db.insert("attachments", { name, file });
      return null;
    },
  }),
  url: query({ args: { id: v.string() }, handler: (ctx, { id }) => ctx.storage.getUrl(id as never) }),
  metadata: query({ args: { id: v.string() }, handler: (ctx, { id }) => ctx.storage.getMetadata(id as never) as never }),
  /** The file's `_storage` document through ctx.db.system. */
  document: query({ args: { id: v.string() }, handler: (ctx, { id }) => ctx.db.system.get(id as never) as never }),
  remove: mutation({
    args: { id: v.string() },
    handler: async (ctx, { id }) => {
      await ctx.storage.delete(id as never);
      return null;
    },
  }),
  /** Stores `size` bytes of a pattern from an action; answers the id and its URL. */
  storeFromAction: action({
    args: { size: v.number(), type: v.optional(v.string()) },
    handler: async (ctx, { size, type }) => {
      const bytes = new Uint8Array(size).map((_, index) => index % 251);
      const id = await ctx.storage.store(new Blob([bytes], type !== undefined ? { type } : {}));
      return { id, url: await ctx.storage.getUrl(id) };
    },
  }),
  /** Reads a file back in an action: its size and the sum of its bytes. */
  readInAction: action({
    args: { id: v.string() },
    handler: async (ctx, { id }) => {
      const blob = await ctx.storage.get(id as never);
      if (blob === null) return null;
      const bytes = new Uint8Array(await blob.arrayBuffer());
      return { size: bytes.byteLength, sum: bytes.reduce((sum, byte) => sum + byte, 0), type: blob.type };
    },
  }),
  deleteInAction: action({
    args: { id: v.string() },
    handler: async (ctx, { id }) => {
      await ctx.storage.delete(id as never);
      return null;
    },
  }),
};

export const functions = { files };
