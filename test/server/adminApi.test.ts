/**
 * The admin API the dashboard is built on (docs/admin-api.md), over a real node, real
 * sockets and the real client library: nothing of the deployment without the key (HTTP
 * and WebSocket), the system functions' reads and validated writes, live pages, logs
 * followed over the WebSocket, the deployment view, and a follower that routes an
 * admin's edit to the writer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { LogEntry } from "../../src/sync/protocol.js";
import { decodeValue } from "../../src/model/index.js";
import { functionReference } from "../../src/client/index.js";
import { within } from "../support/within.js";
import { SocketClient, startSyncAppNode, startTestNode } from "./serverHarness.js";
import { App } from "../../src/functions/App.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

const ADMIN_KEY = "admin-api-test-key-0123456789";
const fn = (path: string) => functionReference<any>(path);
const errorCodeOf = (error: unknown) => (error as { code?: string } | null)?.code;
const root = mkdtempSync(join(tmpdir(), "cairn-admin-api-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function adminNode() {
  const started = await startTestNode({ adminKey: ADMIN_KEY });
  cleanups.push(() => started.close());
  return started.node;
}

function client(url: string): CairnClient {
  const created = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { onError: () => undefined });
  cleanups.push(() => created.close());
  return created;
}

async function get(url: string, path: string, key: string | null = ADMIN_KEY): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, url), { headers: key === null ? {} : { authorization: `Admin ${key}` } });
  return { status: response.status, body: await response.json() };
}

async function post(url: string, path: string, body: unknown, key: string | null = ADMIN_KEY): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, url), {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === null ? {} : { authorization: `Admin ${key}` }) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const ADMIN_READS = ["/api/admin/tables", "/api/admin/functions", "/api/admin/history?id=x", "/api/admin/logs", "/api/admin/deployment", "/api/admin/metrics", "/api/admin/status"];

describe("without the admin key", () => {
  it("answers every admin route 403 and tells nothing of the deployment", async () => {
    const node = await adminNode();
    await client(node.url).mutation(fn("notes:add"), { channel: "secret-channel", body: "secret-body" });
    for (const key of [null, "wrong-key", `${ADMIN_KEY}x`, ADMIN_KEY.slice(1)]) {
      for (const path of ADMIN_READS) {
        const answer = await get(node.url, path, key);
        expect(answer.status, `${path} with ${key}`).toBe(403);
        expect(answer.body.error.code).toBe("FORBIDDEN");
        expect(JSON.stringify(answer.body)).not.toMatch(/secret|notes|by_channel/);
      }
      const call = await post(node.url, "/api/admin/query", { path: "_system:page", args: { table: "notes", paginationOpts: { numItems: 10, cursor: null } } }, key);
      expect(call.status).toBe(403);
    }
    // A system function is no public function: a client is told it does not exist.
    const publicCall = await post(node.url, "/api/query", { path: "_system:page", args: { table: "notes", paginationOpts: { numItems: 10, cursor: null } } }, null);
    expect(publicCall.body.error.code).toBe("FUNCTION_NOT_FOUND");
  });

  it("refuses a wrong key on the WebSocket, keeps the session unprivileged, and ends it after repeated guesses", async () => {
    const node = await adminNode();
    const socket = await SocketClient.open(node.url);
    cleanups.push(() => socket.close());
    socket.write({ type: "Connect", sessionId: "s1" });
    await socket.next((message) => message.type === "ConnectAck");
    socket.write({ type: "AdminAuth", key: "wrong-key" });
    const refused = await socket.next((message) => message.type === "AdminAuthResponse");
    expect(refused).toMatchObject({ success: false, error: { code: "FORBIDDEN" } });
    socket.write({ type: "SubscribeLogs" });
    expect(await socket.next((message) => message.type === "ProtocolError")).toMatchObject({ error: { code: "FORBIDDEN" } });
    socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "_system:page", args: { table: "notes", paginationOpts: { numItems: 5, cursor: null } } }], remove: [] });
    const transition = await socket.next((message) => message.type === "Transition");
    expect(transition).toMatchObject({ modifications: [{ type: "QueryFailed", error: { code: "FUNCTION_NOT_FOUND" } }] });
    socket.write({ type: "AdminAuth", key: "guess-2" });
    socket.write({ type: "AdminAuth", key: "guess-3" });
    await socket.whenClosed();
    expect(socket.frames.some((message) => message.type === "FatalError" && message.error.code === "FORBIDDEN")).toBe(true);
  });

  it("refuses every admin session on a node without an admin key", async () => {
    const started = await startTestNode({ adminKey: null });
    cleanups.push(() => started.close());
    const anonymous = client(started.node.url);
    expect(errorCodeOf(await anonymous.setAdminKey("anything").catch((error: unknown) => error))).toBe("FORBIDDEN");
    expect((await get(started.node.url, "/api/admin/tables", "anything")).status).toBe(403);
  });
});

describe("an admin", () => {
  it("reads the past with a query at ts within the node's history window; refuses a ts on writes and malformed ones", async () => {
    const node = await adminNode();
    const writing = client(node.url);
    const list = async (body: Record<string, unknown>) => post(node.url, "/api/admin/query", { path: "notes:list", args: { channel: "past" }, ...body });
    await writing.mutation(fn("notes:add"), { channel: "past", body: "first" });
    const then = (await list({})).body.ts as number;
    await writing.mutation(fn("notes:add"), { channel: "past", body: "second" });
    const present = await list({});
    expect(decodeValue(present.body.value)).toEqual(["first", "second"]);
    const past = await list({ ts: then });
    expect(past.status).toBe(200);
    expect(past.body.ts).toBe(then);
    expect(decodeValue(past.body.value)).toEqual(["first"]);
    // Before the deployment held anything, and before the node's history starts.
    expect(decodeValue((await list({ ts: 0 })).body.value)).toEqual([]);
    // Only queries read the past; bad ts values are refused as input.
    const mutation = await post(node.url, "/api/admin/mutation", { path: "notes:add", args: { channel: "past", body: "third" }, ts: then });
    expect(mutation.body.error.code).toBe("INVALID_ARGUMENT");
    for (const ts of [-1, 1.5, "1", 2 ** 60]) expect((await list({ ts })).body.error.code, String(ts)).toBe("PROTOCOL_INVALID");
    expect(decodeValue((await list({})).body.value)).toEqual(["first", "second"]);
  });

  it("lists tables with counts and indexes, and functions with their validators", async () => {
    const node = await adminNode();
    const writer = client(node.url);
    for (const body of ["a", "b", "c"]) await writer.mutation(fn("notes:add"), { channel: "c1", body });
    const tables = await get(node.url, "/api/admin/tables");
    expect(tables.status).toBe(200);
    const notes = tables.body.tables.find((table: { name: string }) => table.name === "notes");
    expect(notes.documents).toBe(3);
    expect(notes.indexes.map((index: { name: string }) => index.name)).toEqual(expect.arrayContaining(["by_id", "by_creation", "by_channel"]));
    const functions = await get(node.url, "/api/admin/functions");
    const add = functions.body.functions.find((fn: { path: string }) => fn.path === "notes:add");
    expect(add).toMatchObject({ kind: "mutation", visibility: "public", args: { type: "object", properties: { channel: { type: "string" } } } });
    expect(functions.body.functions.some((fn: { path: string }) => fn.path.startsWith("_system:"))).toBe(false);
    // The sync test app has no HTTP actions.
    expect(functions.body.http).toEqual({ path: "/http", routes: [] });
  });

  it("pages a table live, edits through validated system mutations, and reads a document's history", async () => {
    const node = await adminNode();
    const admin = client(node.url);
    await admin.setAdminKey(ADMIN_KEY);
    const pages: unknown[] = [];
    const pageArgs = { table: "notes", index: "by_channel", eq: ["live"], order: "asc", paginationOpts: { numItems: 10, cursor: null } };
    const stop = admin.subscribe(fn("_system:page"), pageArgs, (value) => pages.push(value));
    cleanups.push(stop);
    await within("admin api", "the expected update", () => pages.length > 0);
    expect(pages.at(-1)).toMatchObject({ page: [], isDone: true });

    // Another client's commit appears in the admin's live page.
    const other = client(node.url);
    await other.mutation(fn("notes:add"), { channel: "live", body: "first" });
    await within("admin api", "the expected update", () => (pages.at(-1) as { page: unknown[] }).page.length === 1);
    const row = (pages.at(-1) as { page: { _id: string; body: string }[] }).page[0]!;
    expect(row.body).toBe("first");

    // An invalid edit is refused with the validator's message and changes nothing.
    const invalid = await admin.mutation(fn("_system:replace"), { id: row._id, document: { channel: "live", body: 42 } }).catch((error: unknown) => error);
    expect(errorCodeOf(invalid)).toBe("INVALID_ARGUMENT");
    expect((invalid as Error).message).toMatch(/body/);
    const unchanged = await admin.query(fn("_system:get"), { id: row._id });
    expect(unchanged).toMatchObject({ body: "first" });
    // Neither may an insert set system fields or a field the schema does not know.
    expect(errorCodeOf(await admin.mutation(fn("_system:insert"), { table: "notes", document: { _id: row._id, channel: "x", body: "y" } }).catch((error: unknown) => error))).toBe("INVALID_ARGUMENT");
    expect(errorCodeOf(await admin.mutation(fn("_system:insert"), { table: "notes", document: { channel: "x", body: "y", extra: 1 } }).catch((error: unknown) => error))).toBe("INVALID_ARGUMENT");
    expect(errorCodeOf(await admin.mutation(fn("_system:insert"), { table: "nope", document: {} }).catch((error: unknown) => error))).toBe("INVALID_ARGUMENT");

    await admin.mutation(fn("_system:replace"), { id: row._id, document: { channel: "live", body: "edited" } });
    await within("admin api", "the expected update", () => (pages.at(-1) as { page: { body: string }[] }).page[0]?.body === "edited");
    const inserted = (await admin.mutation(fn("_system:insert"), { table: "notes", document: { channel: "live", body: "second" } })) as string;
    await within("admin api", "the expected update", () => (pages.at(-1) as { page: unknown[] }).page.length === 2);
    await admin.mutation(fn("_system:delete"), { id: inserted });
    await within("admin api", "the expected update", () => (pages.at(-1) as { page: unknown[] }).page.length === 1);

    const history = await get(node.url, `/api/admin/history?id=${encodeURIComponent(row._id)}`);
    expect(history.status).toBe(200);
    expect(history.body.table).toBe("notes");
    expect(history.body.revisions.map((revision: { value: unknown }) => (decodeValue(revision.value as never) as { body: string }).body)).toEqual(["edited", "first"]);
    const deleted = await get(node.url, `/api/admin/history?id=${encodeURIComponent(inserted)}`);
    expect(deleted.body.revisions[0].value).toBeNull();
    expect((await get(node.url, "/api/admin/history?id=not-an-id")).body.error.code).toMatch(/DOCUMENT_ID_INVALID|INVALID_ARGUMENT/);
    expect((await get(node.url, `/api/admin/history?id=${encodeURIComponent(row._id)}&limit=1000`)).status).toBe(400);
  });

  it("filters a page by an index range and pages through it", async () => {
    const node = await adminNode();
    const admin = client(node.url);
    await admin.setAdminKey(ADMIN_KEY);
    for (let index = 0; index < 7; index++) await admin.mutation(fn("_system:insert"), { table: "counters", document: { name: `n${index}`, value: index } });
    const first = (await admin.query(fn("_system:page"), { table: "counters", index: "by_name", lower: { value: "n2", inclusive: true }, upper: { value: "n5", inclusive: false }, paginationOpts: { numItems: 2, cursor: null } })) as any;
    expect(first.page.map((row: { name: string }) => row.name)).toEqual(["n2", "n3"]);
    const second = (await admin.query(fn("_system:page"), { table: "counters", index: "by_name", lower: { value: "n2", inclusive: true }, upper: { value: "n5", inclusive: false }, paginationOpts: { numItems: 2, cursor: first.continueCursor } })) as any;
    expect(second.page.map((row: { name: string }) => row.name)).toEqual(["n4"]);
    const descending = (await admin.query(fn("_system:page"), { table: "counters", index: "by_name", order: "desc", paginationOpts: { numItems: 3, cursor: null } })) as any;
    expect(descending.page.map((row: { name: string }) => row.name)).toEqual(["n6", "n5", "n4"]);
    const tooMany = await admin.query(fn("_system:page"), { table: "counters", index: "by_name", eq: ["a", 1, 2, "x"], paginationOpts: { numItems: 3, cursor: null } }).catch((error: unknown) => error);
    expect(errorCodeOf(tooMany)).toBe("INVALID_ARGUMENT");
  });

  it("runs a function as a given identity with its stats, and follows the logs live", async () => {
    const node = await adminNode();
    const admin = client(node.url);
    await admin.setAdminKey(ADMIN_KEY);
    const batches: LogEntry[][] = [];
    const stop = admin.subscribeLogs((entries) => batches.push([...entries]));
    cleanups.push(stop);
    await within("admin api", "the expected update", () => batches.length > 0);

    const asUser = await post(node.url, "/api/admin/query", { path: "users:whoami", args: {}, identity: { subject: "user-7" } });
    expect(asUser.body).toMatchObject({ value: "user-7", stats: { readRanges: 0 } });
    expect(asUser.body.stats.durationMs).toBeGreaterThanOrEqual(0);
    const mutation = await post(node.url, "/api/admin/mutation", { path: "notes:add", args: { channel: "c", body: "hello" } });
    expect(mutation.body.stats.writeRanges).toBeGreaterThan(0);
    const failed = await post(node.url, "/api/admin/mutation", { path: "notes:fail", args: {} });
    expect(failed.body.error.code).toBe("FUNCTION_FAILED");

    await within("admin api", "the expected update", () => batches.flat().some((entry) => entry.path === "notes:fail"));
    const failure = batches.flat().find((entry) => entry.path === "notes:fail")!;
    expect(failure).toMatchObject({ kind: "mutation", level: "error", outcome: "error", error: { code: "FUNCTION_FAILED" } });
    expect(failure.error!.stack).toMatch(/nope/);
    const logs = await get(node.url, "/api/admin/logs?function=notes:&level=error");
    expect(logs.body.entries.map((entry: LogEntry) => entry.path)).toEqual(["notes:fail"]);
    expect((await get(node.url, "/api/admin/logs?limit=0")).status).toBe(400);
  });

  it("shows the deployment and the node's metrics", async () => {
    const node = await adminNode();
    const deployment = await get(node.url, "/api/admin/deployment");
    expect(deployment.status).toBe(200);
    expect(deployment.body.node).toMatchObject({ nodeId: "test-node", role: "writer" });
    expect(deployment.body.shards[0]).toMatchObject({ shard: 0, writer: "test-node" });
    expect(deployment.body.store.costPerHour.requestsUsd).toBeGreaterThanOrEqual(0);
    expect(deployment.body.schema.tables.map((table: { name: string }) => table.name)).toEqual(["notes", "counters", "_scheduled_functions", "_storage"]);
    const metrics = await get(node.url, "/api/admin/metrics");
    expect(metrics.body.intervalMs).toBeGreaterThan(0);
    expect(Array.isArray(metrics.body.points)).toBe(true);
  });
});

describe("function logs under abuse", () => {
  const noisySchema = defineSchema({ items: defineTable({ n: v.number() }) });
  const noisyFunctions = functionsFor(noisySchema);
  const noisyApp = App.fromModule(
    {
      schema: noisySchema,
      functions: {
        noisy: {
          huge: noisyFunctions.query({ args: {}, handler: async () => { console.log("x".repeat(1024 * 1024)); return null; } }),
          chatty: noisyFunctions.query({ args: {}, handler: async () => { for (let line = 0; line < 10_000; line++) console.info(`line ${line}`); return null; } }),
          quiet: noisyFunctions.query({ args: { n: v.number() }, handler: async (_ctx, { n }) => n }),
        },
      },
    },
    "noisy test app",
  );

  it("keeps a 1 MiB line, 10,000 lines and a flood of calls bounded in the ring, the route and the frames", async () => {
    const started = await startTestNode({ adminKey: ADMIN_KEY, app: noisyApp, echoFunctionConsole: false });
    cleanups.push(() => started.close());
    const { url } = started.node;
    const frames: { entries: readonly LogEntry[]; dropped: number }[] = [];
    const socket = await SocketClient.open(url);
    cleanups.push(() => socket.close());
    socket.write({ type: "Connect", sessionId: "logs" });
    socket.write({ type: "AdminAuth", key: ADMIN_KEY });
    socket.write({ type: "SubscribeLogs" });
    await socket.next((message) => message.type === "AdminAuthResponse" && message.success);
    let frameBytesMax = 0;
    socket.socket.on("message", (data) => {
      const text = data.toString();
      if (!text.includes('"LogEntries"')) return;
      frameBytesMax = Math.max(frameBytesMax, Buffer.byteLength(text));
      frames.push(JSON.parse(text));
    });

    for (let call = 0; call < 3; call++) await post(url, "/api/admin/query", { path: "noisy:huge", args: {} });
    await post(url, "/api/admin/query", { path: "noisy:chatty", args: {} });
    const huge = (await get(url, "/api/admin/logs?function=noisy:huge")).body.entries as LogEntry[];
    expect(huge).toHaveLength(3);
    for (const entry of huge) expect(entry.lines[0]!.text.length).toBeLessThanOrEqual(8 * 1024 + 64);
    expect(huge[0]!.lines[0]!.text).toMatch(/chars cut\]$/);
    const chatty = (await get(url, "/api/admin/logs?function=noisy:chatty")).body.entries as LogEntry[];
    expect(chatty[0]!.lines).toHaveLength(64);
    expect(chatty[0]!.truncatedLines).toBe(10_000 - 64);
    // A flood: far more calls than the ring keeps, all at once.
    await Promise.all(Array.from({ length: 3_000 }, (_, n) => post(url, "/api/admin/query", { path: "noisy:quiet", args: { n } })));


    const all = await fetch(new URL("/api/admin/logs?limit=1000", url), { headers: { authorization: `Admin ${ADMIN_KEY}` } });
    const text = await all.text();
    expect(Buffer.byteLength(text)).toBeLessThan(8 * 1024 * 1024);
    const ring = JSON.parse(text) as { entries: LogEntry[]; dropped: number };
    expect(ring.entries).toHaveLength(1_000);
    expect(ring.dropped).toBeGreaterThan(0);

    await within("admin api", "the flood's last entries on the socket", () => frames.some((frame) => frame.entries.some((entry) => entry.path === "noisy:quiet")));
    // Frames stay bounded whatever the flood: at most 200 entries and about a MiB each.
    for (const frame of frames) expect(frame.entries.length).toBeLessThanOrEqual(200);
    expect(frameBytesMax).toBeLessThan(2 * 1024 * 1024);
  });
});

describe("on a follower", () => {
  it("routes an admin's edit to the writer and shows the follower's lag", async () => {
    const directory = mkdtempSync(join(root, "follower-"));
    const writer = await startSyncAppNode(directory, "writer", { adminKey: ADMIN_KEY });
    cleanups.push(() => writer.stop());
    const follower = await startSyncAppNode(directory, "follower", { adminKey: ADMIN_KEY, role: "replica" });
    cleanups.push(() => follower.stop());
    const admin = client(follower.url);
    await admin.setAdminKey(ADMIN_KEY);
    const id = (await admin.mutation(fn("_system:insert"), { table: "notes", document: { channel: "f", body: "via follower" } })) as string;
    // The edit committed on the writer, and the follower that took it shows it.
    expect(await client(writer.url).query(fn("notes:list"), { channel: "f" })).toEqual(["via follower"]);
    expect(await admin.query(fn("_system:get"), { id })).toMatchObject({ body: "via follower" });
    const deployment = await get(follower.url, "/api/admin/deployment");
    expect(deployment.body.node.role).toBe("replica");
    expect(deployment.body.nodes.map((node: { nodeId: string }) => node.nodeId)).toEqual(expect.arrayContaining(["follower", "writer"]));
    expect(deployment.body.shards[0]).toMatchObject({ writer: "writer" });
    expect(deployment.body.shards[0]).toHaveProperty("stalenessMs");
    expect(deployment.body.frontier.heldBy).toHaveProperty("heldBackMs");
  });
});
