/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of three real node processes over six shards
 * in a directory bucket under a steady write load of bank transfers from twelve clients
 * spread over the nodes (test/server/bankChaos.ts). Midway, one node is frozen (SIGSTOP,
 * as a long GC pause or a stalled VM freezes it) with transfers in flight, until the
 * others write its shards (after its lease lapsed); then it is thawed and, being a target
 * of the rendezvous assignment again, gets its shards back. The thawed node must not
 * acknowledge anything it can no longer make durable: the checker passes — every
 * acknowledged transfer once in the logs and on every node, none reported failed there,
 * each client's transfers in log order per shard, one writer per epoch, every bank's
 * total kept at every sampled snapshot.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, it } from "vitest";
import { runBankChaos } from "./bankChaos.js";
import { directoryStore, stopEverything } from "./fleetHarness.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-freeze-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

describe("a fleet under write load, one node frozen past its lease", () => {
  it("keeps every acknowledged transfer once, in order, and every bank's total, when the frozen node thaws and takes its shards back", { timeout: 120_000 }, async () => {
    await runBankChaos({ store: directoryStore(join(root, "bucket")), localRoot: root, disruption: "SIGSTOP" });
  });
});
