/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of three real node processes over six shards
 * and one bucket — a directory, and the S3 test endpoint reached by URL through the real
 * AWS SDK — under a steady write load: twelve clients, four starting on each node (each
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
import { directoryStore, type FleetStore, s3EndpointStore, stopEverything } from "./fleetHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-chaos-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

const STORES: readonly [string, () => Promise<FleetStore>][] = [
  ["a directory", async () => directoryStore(join(root, "bucket"))],
  ["the S3 test endpoint", () => s3EndpointStore()],
];

for (const [name, makeStore] of STORES) {
  describe(`a fleet under write load over ${name}`, () => {
    it("loses a SIGKILLed node's shards to the survivors with every acknowledged transfer once, in order, and every bank's total kept", { timeout: 120_000 }, async () => {
      await runBankChaos({ store: await makeStore(), localRoot: join(root, name.replace(/\W+/g, "-")), disruption: "SIGKILL" });
    });
  });
}
