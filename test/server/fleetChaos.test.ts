/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of three real node processes over six shards
 * and one directory bucket (fleetChaosS3.test.ts: the same over the S3 test endpoint)
 * under a steady write load: twelve clients, four starting on each node (each
 * knows every node and moves on when its node fails), each sending one bank transfer
 * after another (test/server/bankChaos.ts). Midway, one node is SIGKILLed. The checker
 * passes: every acknowledged transfer once in the logs and on both survivors, none
 * reported failed there, each client's transfers in log order per shard, one writer per
 * epoch, and every bank's total kept at every sampled snapshot.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, it } from "vitest";
import { runBankChaos } from "./bankChaos.js";
import { directoryStore, stopEverything } from "./fleetHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-chaos-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

describe("a fleet under write load over a directory", () => {
  it("loses a SIGKILLed node's shards to the survivors with every acknowledged transfer once, in order, and every bank's total kept", { timeout: 120_000 }, async () => {
    await runBankChaos({ store: directoryStore(join(root, "bucket")), localRoot: root, disruption: "SIGKILL" });
  });
});
