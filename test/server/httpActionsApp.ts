/**
 * The app the HTTP actions tests serve: notes (a mutation, a query, an internal query)
 * and an `http` router over them — a JSON webhook that writes and reads back, a streamed
 * echo of any body, a prefix route, a route that reports the caller, cookies, and
 * handlers that fail in each way a handler can.
 */
import { defineSchema, defineTable, functionsFor, httpAction, httpRouter, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  notes: defineTable({ channel: v.string(), body: v.string() }).index("by_channel", ["channel"]),
});

const { query, mutation, internalQuery } = functionsFor(schema);

const notes = {
  add: mutation({
    args: { channel: v.string(), body: v.string() },
    handler: async (ctx, { channel, body }) => {
      await ctx.db.insert("notes", { channel, body });
      return body.length;
    },
  }),
  list: query({
    args: { channel: v.string() },
    handler: async (ctx, { channel }) => (await ctx.db.query("notes").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()).map((note) => note.body),
  }),
  count: internalQuery({
    args: { channel: v.string() },
    handler: async (ctx, { channel }) => (await ctx.db.query("notes").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()).length,
  }),
};

export const functions = { notes };

export const http = httpRouter();

/** A webhook: the JSON body becomes a note; answers the channel's notes and their count (an internal query). */
http.route({
  path: "/hooks/note",
  method: "POST",
  handler: httpAction(async (ctx, request) => {
    const { channel, body } = (await request.json()) as { channel: string; body: string };
    await ctx.runMutation("notes:add", { channel, body });
    const notes = await ctx.runQuery("notes:list", { channel });
    const count = await ctx.runQuery("notes:count", { channel });
    return Response.json({ notes, count }, { status: 201, headers: { "x-channel": channel } });
  }),
});

/** Streams the request body back as it arrives, with its byte count in a trailer-less header after the fact. */
http.route({
  path: "/echo",
  method: "PUT",
  handler: httpAction(async (_ctx, request) => new Response(request.body, { headers: { "content-type": request.headers.get("content-type") ?? "application/octet-stream" } })),
});

http.route({
  pathPrefix: "/files/",
  method: "GET",
  handler: httpAction(async (_ctx, request) => {
    const url = new URL(request.url);
    return new Response(`file ${url.pathname} ${url.searchParams.get("v") ?? ""}`, { headers: { "content-type": "text/plain", "cache-control": "max-age=60" } });
  }),
});

/** A longer prefix wins over a shorter one. */
http.route({
  pathPrefix: "/files/private/",
  method: "GET",
  handler: httpAction(async () => new Response("private", { status: 403 })),
});

http.route({
  path: "/whoami",
  method: "GET",
  handler: httpAction(async (ctx) => {
    const identity = await ctx.auth.getUserIdentity();
    const headers = new Headers();
    headers.append("set-cookie", "a=1; Path=/");
    headers.append("set-cookie", "b=2; Path=/");
    return new Response(identity?.subject ?? "anonymous", { headers });
  }),
});

http.route({
  path: "/throws",
  method: "POST",
  handler: httpAction(async () => {
    throw new Error("secret-token-xyz leaked?");
  }),
});

http.route({
  path: "/not-a-response",
  method: "GET",
  handler: httpAction(async () => ({ status: 200 }) as unknown as Response),
});

/** Calls a function that does not exist: the handler's failure, not the client's. */
http.route({
  path: "/calls-missing",
  method: "GET",
  handler: httpAction(async (ctx) => Response.json(await ctx.runQuery("notes:nope", {}))),
});

/** A body that fails midway: the status is already sent, so the connection ends. */
http.route({
  path: "/breaks-midway",
  method: "GET",
  handler: httpAction(async () => {
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(new TextEncoder().encode("part one\n"));
          return;
        }
        controller.error(new Error("disk gone"));
      },
    });
    return new Response(body);
  }),
});
