/**
 * Scenario: fleetChaos.test.ts over the S3 test endpoint (an in-memory S3 on a loopback
 * port in the test process) instead of a directory: three real fleet node processes
 * reach it by an s3:// URL through the real AWS SDK. Six shards converge to the
 * rendezvous assignment, twelve clients spread over the nodes send bank transfers one
 * after another (test/server/bankChaos.ts), one node is SIGKILLed midway, and the checker
 * passes: every acknowledged transfer once in the logs and on both survivors, none
 * reported failed there, each client's transfers in log order per shard, one writer per
 * epoch, and every bank's total kept at every sampled snapshot.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, it } from "vitest";
import { runBankChaos } from "./bankChaos.js";
import { s3EndpointStore, stopEverything } from "./fleetHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-chaos-s3-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

describe("a fleet under write load over the S3 test endpoint", () => {
  it("loses a SIGKILLed node's shards to the survivors with every acknowledged transfer once, in order, and every bank's total kept", { timeout: 120_000 }, async () => {
    await runBankChaos({ store: await s3EndpointStore(), localRoot: root, disruption: "SIGKILL" });
  });
});
