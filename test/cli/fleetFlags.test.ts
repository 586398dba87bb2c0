/**
 * Scenario: `cairn serve --fleet` as a user runs it, in real child processes. A fleet
 * flag combined with --replica, --standby or --takeover, --fleet without CAIRN_ADMIN_KEY,
 * --beat-ms or --presence-ttl-ms without --fleet, and fleet tuning that could not fail
 * over (presence TTL under two beats or over the lease TTL) are each refused with exit
 * code 1 and a message naming the flag or rule at fault — and leave no deployment, lease
 * or presence entry in the bucket. A well-formed `--fleet` serves as a fleet node and stops
 * on SIGINT.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runCairn } from "../support/runCairn.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-flags-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const adminKeyBefore = process.env["CAIRN_ADMIN_KEY"];
afterEach(() => {
  if (adminKeyBefore === undefined) delete process.env["CAIRN_ADMIN_KEY"];
  else process.env["CAIRN_ADMIN_KEY"] = adminKeyBefore;
});

let runs = 0;
/** `cairn serve` on a fresh bucket and local directory, with `adminKey` (null: none) in its environment. */
async function serve(flags: readonly string[], adminKey: string | null = "fleet-flags-admin-key") {
  const bucket = join(root, `bucket-${++runs}`);
  if (adminKey === null) delete process.env["CAIRN_ADMIN_KEY"];
  else process.env["CAIRN_ADMIN_KEY"] = adminKey;
  const run = await runCairn(["serve", "--port", "0", "--store", bucket, "--local", join(root, `local-${runs}`), ...flags], { stream: "stdout", pattern: /is a fleet node/, signal: "SIGINT" });
  return { ...run, bucket };
}

/** The deployment's files in a directory bucket (objects end in "@"): globals, catalog, manifests, segments, presence entries. */
function deploymentObjects(bucket: string): string[] {
  if (!existsSync(bucket)) return [];
  return readdirSync(bucket, { recursive: true, encoding: "utf8" }).filter((path) => /^(globals|schema|nodes|s\d+)/.test(path));
}

const FAST_LEASE = ["--engine-tuning", JSON.stringify({ leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 }), "--max-clock-skew-ms", "200"];

describe("cairn serve --fleet, refused", () => {
  it.each([
    [["--fleet", "--replica"], /--fleet cannot be combined with --replica/],
    [["--fleet", "--standby"], /--fleet cannot be combined with --standby/],
    [["--fleet", "--takeover"], /--fleet cannot be combined with --takeover/],
    [["--beat-ms", "500"], /--beat-ms and --presence-ttl-ms go with --fleet/],
    [["--presence-ttl-ms", "5000"], /--beat-ms and --presence-ttl-ms go with --fleet/],
    [["--fleet", "--beat-ms", "1000", "--presence-ttl-ms", "1500", ...FAST_LEASE], /presenceTtlMs \(1500\) must be at least two beats/],
    [["--fleet", "--beat-ms", "250", "--presence-ttl-ms", "4000", ...FAST_LEASE], /presenceTtlMs \(4000\) must not exceed the lease \(leaseTtlMs 3000\)/],
    // The defaults' lease (10 s) under a presence TTL above it.
    [["--fleet", "--presence-ttl-ms", "20000"], /presenceTtlMs \(20000\) must not exceed the lease/],
    [["--fleet", "--beat-ms", "10"], /invalid fleet tuning/],
  ])("%j", async (flags, message) => {
    const run = await serve(flags);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/INVALID_ARGUMENT|error: option/);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).not.toMatch(/is a fleet node/);
    expect(deploymentObjects(run.bucket)).toEqual([]);
  });

  it("without CAIRN_ADMIN_KEY", async () => {
    const run = await serve(["--fleet"], null);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/\[INVALID_ARGUMENT\] --fleet needs CAIRN_ADMIN_KEY/);
    expect(deploymentObjects(run.bucket)).toEqual([]);
  });
});

describe("cairn serve --fleet", () => {
  it("serves as a fleet node, and on SIGINT hands its shards over, removes its presence entry and exits 0", async () => {
    const run = await serve(["--fleet", "--shards", "2", "--node-id", "solo", "--beat-ms", "250", "--presence-ttl-ms", "1500", ...FAST_LEASE]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/node solo is a fleet node; serving at http:\/\//);
    expect(run.stdout).toMatch(/stopped/);
    // It created the deployment; its presence entry is gone with it.
    expect(deploymentObjects(run.bucket)).toEqual(expect.arrayContaining(["globals@", "s0/manifest@", "s1/manifest@"]));
    expect(deploymentObjects(run.bucket).filter((path) => path.startsWith("nodes/"))).toEqual([]);
  });
});
