/**
 * Scenario: `cairn serve` of an app with HTTP actions, as a user runs it, in real child
 * processes. The node announces the routes and where they are served; with
 * `--http-path /hooks` the app's webhook answers under /hooks (and /http is no longer
 * the router's). An `--http-path` that cannot hold them (relative, with a trailing
 * slash, or over one of Cairn's own paths: /api, /_dashboard, /cairn-client.js) is refused with exit code 1 naming the flag's rule, before the bucket
 * is touched.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCairn } from "../support/runCairn.js";
import { ServeProcess } from "../server/serveProcess.js";

const APP = "test/server/httpActionsApp.ts";
const root = mkdtempSync(join(tmpdir(), "cairn-serve-http-actions-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("cairn serve with HTTP actions", () => {
  it("serves the app's routes under --http-path and says where", { timeout: 60_000 }, async () => {
    const server = await ServeProcess.start(["--store", join(root, "bucket"), "--local", join(root, "local"), "--port", "0", "--app", APP, "--http-path", "/hooks"]);
    try {
      expect(server.output).toMatch(/HTTP actions under \/hooks: .*POST \/hooks\/note/);
      const answer = await fetch(`${server.url}hooks/hooks/note`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ channel: "c", body: "from a webhook" }) });
      expect(answer.status).toBe(201);
      expect(await answer.json()).toEqual({ notes: ["from a webhook"], count: 1 });
      // The default path is not the router's any more: it falls to the status page's 404.
      expect((await fetch(`${server.url}http/hooks/note`, { method: "POST", body: "{}" })).status).toBe(404);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it.each([["/api/hooks"], ["hooks"], ["/hooks/"], ["/"], ["/_dashboard"], ["/cairn-client.js"]])("refuses --http-path %s before touching the bucket", { timeout: 60_000 }, async (path) => {
    const bucket = join(root, `refused-${path.replace(/\W/g, "_")}`);
    const run = await runCairn(["serve", "--port", "0", "--store", bucket, "--local", join(bucket, "local"), "--app", APP, "--http-path", path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/INVALID_ARGUMENT.*HTTP actions path must be like "\/http"/);
    expect(existsSync(bucket) ? readdirSync(bucket).filter((name) => name !== "local") : []).toEqual([]);
  });
});
