/**
 * Scenario: a node with the demo app and some documents serves the dashboard at
 * `/_dashboard` (and `/_dashboard/`), its script and its stylesheet, to anyone, without
 * the admin key: compressed when asked, revalidated by ETag, and holding nothing of the
 * deployment (no document, no node id, no deployment id, not the key). The data stays
 * behind the key. The files build from src/dashboard (this is a checkout): the script
 * holds Preact's runtime, uPlot and the client library; the stylesheet has uPlot's
 * rules inlined.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STATIC_COMPRESS_BYTES_MIN } from "../../src/base/index.js";
import { createNodeClient } from "../../src/client/node.js";
import { buildDashboard, dashboardFiles } from "../../src/server/DashboardAssets.js";
import { startServer, type RunningNode } from "../../src/server/index.js";
import { decoded, rawRequest } from "./rawHttp.js";

const ADMIN_KEY = "dashboard-test-key-5f0c";
const SECRET_BODY = "a message only the admin may read 7d1e";

let root: string;
let node: RunningNode;
/** The node's id (from its public health answer), which the files must not hold either. */
let nodeId: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cairn-dashboard-assets-"));
  node = await startServer({
    app: join(process.cwd(), "demo/app.ts"),
    store: join(root, "bucket"),
    localDirectory: join(root, "local"),
    adminKey: ADMIN_KEY,
    log: () => undefined,
  });
  const client = createNodeClient(`${node.url.replace(/^http/, "ws")}api/sync`);
  try {
    await client.mutation({ path: "messages:send" }, { channel: "general", author: "ada", body: SECRET_BODY });
  } finally {
    await client.close();
  }
  nodeId = ((await (await fetch(`${node.url}api/health`)).json()) as { nodeId: string }).nodeId;
  expect(nodeId).toMatch(/\S/);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** The page is smaller than STATIC_COMPRESS_BYTES_MIN, so it goes as is, like any small asset. */
const FILES = [
  { path: "/_dashboard", type: "text/html", compressed: false },
  { path: "/_dashboard/", type: "text/html", compressed: false },
  { path: "/_dashboard/app.js", type: "text/javascript", compressed: true },
  { path: "/_dashboard/app.css", type: "text/css", compressed: true },
] as const;

describe("the dashboard's files", () => {
  it.each(FILES)("$path is served without the key, compressed when asked, with no deployment data", async ({ path, type, compressed }) => {
    for (const encoding of ["br", "gzip", null] as const) {
      const answer = await rawRequest(node.url, path, encoding === null ? {} : { headers: { "accept-encoding": encoding } });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-type"]).toContain(type);
      expect(answer.headers["content-encoding"]).toBe(compressed ? (encoding ?? undefined) : undefined);
      if (!compressed) expect(answer.body.byteLength).toBeLessThan(STATIC_COMPRESS_BYTES_MIN);
      expect(answer.headers["cache-control"]).toBe("no-cache");
      const text = decoded(answer).toString("utf8");
      for (const secret of [SECRET_BODY, ADMIN_KEY, nodeId, node.deploymentId]) expect(text).not.toContain(secret);
    }
  });

  it("the page loads its script and stylesheet from /_dashboard/, and both revalidate by ETag", async () => {
    const page = decoded(await rawRequest(node.url, "/_dashboard")).toString("utf8");
    expect(page).toContain('src="/_dashboard/app.js"');
    expect(page).toContain('href="/_dashboard/app.css"');
    for (const path of ["/_dashboard/app.js", "/_dashboard/app.css"]) {
      const first = await rawRequest(node.url, path);
      const again = await rawRequest(node.url, path, { headers: { "if-none-match": String(first.headers.etag) } });
      expect(again.status).toBe(304);
    }
  });

  it("only GET and HEAD; the data stays behind the admin key", async () => {
    expect((await rawRequest(node.url, "/_dashboard", { method: "POST" })).status).toBe(405);
    expect((await rawRequest(node.url, "/_dashboard/other.js")).status).toBe(404);
    const refused = await rawRequest(node.url, "/api/admin/status");
    expect(refused.status).toBe(403);
    const wrongKey = await rawRequest(node.url, "/api/admin/status", { headers: { authorization: "Admin not-the-key" } });
    expect(wrongKey.status).toBe(403);
    expect(decoded(wrongKey).toString("utf8")).not.toContain(nodeId);
  });

  it("builds from src/dashboard: Preact, uPlot and the client library in one minified module; uPlot's styles inlined", async () => {
    const built = await buildDashboard();
    const script = built.script.toString("utf8");
    expect(script).toContain("/api/sync");
    expect(script).toContain("/api/admin/");
    expect(script).toContain("the admin key was refused");
    expect(script).toContain("uplot");
    expect(script).not.toMatch(/\bfrom\s*["']/); // nothing left to import: one bundle
    expect(script.split("\n").length).toBeLessThan(20); // minified
    expect(built.stylesheet.toString("utf8")).toContain(".u-legend");
    expect(built.html.toString("utf8")).toContain('<div id="dashboard">');
    // Once per process: the files the server serves are the same built ones.
    expect(await dashboardFiles()).toBe(await dashboardFiles());
  });
});
