/**
 * Scenario: `cairn serve` (a real process) serving an app whose functions fail and print,
 * called over HTTP and through the client library. A function's bug answers HTTP 500
 * FUNCTION_FAILED (kind Internal) with a request id and nothing of what was thrown, and
 * the server's log holds the stack under that function and request id. A deliberate
 * AppError answers 400 APP_ERROR with its data, which the client library hands to the
 * caller as `error.data`. What a function prints with console.* appears in the server's
 * log prefixed with the function's path and request id; a call made by an action keeps
 * the action's request id.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { functions } from "../functions/errorsApp.js";
import { ServeProcess } from "./serveProcess.js";

const api = apiOf<typeof functions>();
const root = mkdtempSync(join(tmpdir(), "cairn-function-errors-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function post(url: string, path: string, body: unknown): Promise<{ status: number; body: { error?: Record<string, unknown> } }> {
  const response = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as never };
}

async function until(what: string, predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("function errors and output on a server", () => {
  it("answers a bug with 500 and a request id, logs its stack, passes AppError data to clients, and prefixes console output", { timeout: 60_000 }, async () => {
    const server = await ServeProcess.start(["--store", join(root, "bucket"), "--local", join(root, "local"), "--port", "0", "--app", "test/functions/errorsApp.ts"]);
    const client = createNodeClient(`${server.url.replace(/^http/, "ws")}api/sync`, { onError: () => undefined });
    try {
      const buggy = await post(server.url, "api/mutation", { path: "bank:buggy" });
      expect(buggy.status).toBe(500);
      expect(buggy.body.error).toMatchObject({ code: "FUNCTION_FAILED", kind: "Internal" });
      const message = String(buggy.body.error!["message"]);
      const requestId = /request id ([0-9a-f]+)/.exec(message)?.[1];
      expect(requestId).toBeDefined();
      expect(JSON.stringify(buggy.body)).not.toMatch(/internal-detail-42|TypeError|errorsApp/);
      await until("the stack in the server's log", () => server.output.includes(`function bank:buggy failed (request ${requestId})`));
      expect(server.output).toMatch(new RegExp(`function bank:buggy failed \\(request ${requestId}\\): TypeError: cannot read internal-detail-42\\n\\s+at .*errorsApp\\.ts`));

      const refused = await post(server.url, "api/mutation", { path: "bank:withdraw", args: { amount: 5 } });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "APP_ERROR", kind: "InvalidInput", data: { reason: "INSUFFICIENT_FUNDS", balance: 0, wanted: 5 } });
      await expect(client.mutation(api.bank.withdraw, { amount: 7 })).rejects.toMatchObject({ code: "APP_ERROR", data: { reason: "INSUFFICIENT_FUNDS", balance: 0, wanted: 7 } });

      expect((await post(server.url, "api/query", { path: "bank:chatty" })).status).toBe(200);
      await until("the query's output", () => /\[bank:chatty [0-9a-f]{16}\] balance checked \{ owner: 'ada' \}/.test(server.output));
      expect((await post(server.url, "api/action", { path: "bank:outer" })).status).toBe(200);
      await until("the action's output", () => /\[bank:inner [0-9a-f]{16}\] inner/.test(server.output));
      const outerId = /\[bank:outer ([0-9a-f]{16})\] outer/.exec(server.output)?.[1];
      expect(server.output).toContain(`[bank:inner ${outerId}] inner`);
    } finally {
      client.close();
      expect(await server.stop()).toBe(0);
    }
  });
});
