/**
 * Scenario: real `cairn serve` processes over one directory bucket. A client's mutation
 * commits, the server is SIGKILLed right after the segment lands — before the client
 * hears anything (a response that may have left is dropped by the client, as a lost
 * one would be) — and restarted. The client reconnects, learns from ConnectAck that the
 * held mutation committed, re-sends it with its original (clientId, seq), is answered
 * from the receipt, and the counter shows it applied once. The lease the dead process
 * left makes the new one wait it out (takeover), which is what a restart must survive.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SocketClient } from "./serverHarness.js";
import { freePort, ServeProcess } from "./serveProcess.js";

const root = mkdtempSync(join(tmpdir(), "cairn-crash-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function segmentCount(bucket: string): number {
  try {
    return readdirSync(join(bucket, "s0", "log")).length;
  } catch {
    return 0;
  }
}

describe("a server killed between commit and response", () => {
  it("answers the re-sent mutation from its receipt after the restart, applied once", async () => {
    const bucket = join(root, "bucket");
    const port = String(await freePort());
    const args = ["--store", bucket, "--local", join(root, "local"), "--app", "test/sync/syncApp.ts", "--port", port];
    const first = await ServeProcess.start(args);
    const before = await SocketClient.open(first.url);
    before.write({ type: "Connect", sessionId: "before", clientId: "crash-client" });
    await before.next((m) => m.type === "ConnectAck");
    const segmentsBefore = segmentCount(bucket);
    before.write({ type: "Mutation", requestId: 1, path: "counters:bump", args: { name: "once" }, clientId: "crash-client", seq: 1 });
    while (segmentCount(bucket) === segmentsBefore) await new Promise((resolve) => setImmediate(resolve));
    await first.kill();
    await before.whenClosed();

    const second = await ServeProcess.start(args);
    try {
      const after = await SocketClient.open(second.url);
      after.write({ type: "Connect", sessionId: "after", clientId: "crash-client", held: [1], ackedThrough: 0 });
      const ack = await after.next((m) => m.type === "ConnectAck");
      expect(ack).toMatchObject({ known: [1], results: [{ seq: 1, value: 1 }] });
      after.write({ type: "Mutation", requestId: 1, path: "counters:bump", args: { name: "once" }, clientId: "crash-client", seq: 1 });
      expect(await after.next((m) => m.type === "MutationResponse")).toMatchObject({ success: true, value: 1, replayed: true });
      after.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "counters:get", args: { name: "once" } }], remove: [] });
      expect(await after.next((m) => m.type === "Transition" && m.endVersion.querySet === 1)).toMatchObject({ modifications: [{ type: "QueryUpdated", value: 1 }] });
      after.close();
      expect(await second.stop()).toBe(0);
      expect(second.output).toMatch(/lease of epoch \d+ released/);
    } finally {
      await second.kill();
    }
  });
});
