/**
 * Scenario: a writer, a standby and a replica (`cairn serve` processes over one bucket on
 * the S3 test endpoint, 3 s leases). The writer is frozen (SIGSTOP) past its lease while clients of the
 * standby and the replica write: some of their mutations were already forwarded to the
 * frozen writer. The standby takes the shard over; the writer stays frozen for a while
 * longer, then resumes and is fenced.
 *
 * What must hold, on every node: writes succeed again soon after the takeover, without
 * waiting for the frozen writer to resume — the mutations forwarded to it are re-routed
 * with their receipt keys (the standby that became the writer runs what it had
 * forwarded; the replica follows the new epoch as soon as it applies the new writer's
 * fence) — and a checker finds every acknowledged write exactly once and nothing no
 * client sent. The rounds alternate: the node that took over is frozen next.
 * `CAIRN_FAILOVER_ROUNDS` (default 2) sets how many takeovers are tried.
 * Not over a directory: a process frozen inside a directory store's compare-and-swap keeps
 * that key's lock while frozen (docs/operations.md), so the takeover would wait for the thaw.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { functions } from "../sync/syncApp.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import { ServeProcess } from "./serveProcess.js";
import { scenarioSteps } from "../support/scenarioSteps.js";

const api = apiOf<typeof functions>();
const ADMIN_KEY = "failover-test-admin-key";
const FAST_LEASES = JSON.stringify({ leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 });
const ROUNDS = Number(process.env["CAIRN_FAILOVER_ROUNDS"] ?? 2);
/** How long a frozen writer stays frozen after the takeover: writes must succeed meanwhile. */
const FROZEN_AFTER_TAKEOVER_MS = 6_000;

const root = mkdtempSync(join(tmpdir(), "cairn-failover-"));
let endpoint: S3Endpoint;
beforeAll(async () => {
  endpoint = await startS3Endpoint();
});
afterAll(async () => {
  await endpoint.close();
  rmSync(root, { recursive: true, force: true });
});
const processes: ServeProcess[] = [];
const clients: CairnClient[] = [];
/** Whether the load loops go on; afterEach ends them also when an assertion failed mid-round. */
let loading = false;
afterEach(async () => {
  loading = false;
  for (const client of clients.splice(0)) client.close();
  for (const process of processes.splice(0)) {
    process.resume();
    await process.kill();
  }
});

async function serve(name: string, extra: readonly string[]): Promise<ServeProcess> {
  const started = await ServeProcess.start(
    ["--store", bucketUrl(), "--local", join(root, name), "--app", "test/sync/syncApp.ts", "--port", "0", "--engine-tuning", FAST_LEASES, "--max-clock-skew-ms", "200", ...extra],
    { CAIRN_ADMIN_KEY: ADMIN_KEY, AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey },
  );
  processes.push(started);
  return started;
}

function bucketUrl(): string {
  return `s3://${endpoint.bucket}/failover/?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
}

function client(url: string): CairnClient {
  const made = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
  clients.push(made);
  return made;
}

async function health(node: ServeProcess): Promise<{ role: string; nodeId: string; shards: { writer: string | null; epoch: number }[] }> {
  return (await (await fetch(`${node.url}api/health`, { signal: AbortSignal.timeout(2_000) })).json()) as never;
}

const { step, until } = scenarioSteps("failover", 20);

interface Write {
  readonly body: string;
  readonly via: string;
  readonly sentMs: number;
  outcome: "pending" | "acknowledged" | "failed";
  settledMs: number | null;
}

describe("failover under load", () => {
  it("keeps writes flowing on every node while the old writer stays frozen past the takeover, each applied once", async () => {
    const nodes = [await serve("n0", []), await serve("n1", ["--standby"])];
    const replica = await serve("replica", ["--replica"]);
    const writes: Write[] = [];
    const write = (connection: CairnClient, via: string, body: string) => {
      const entry: Write = { body, via, sentMs: Date.now(), outcome: "pending", settledMs: null };
      writes.push(entry);
      return connection.mutation(api.notes.add, { channel: "load", body }).then(
        () => void Object.assign(entry, { outcome: "acknowledged", settledMs: Date.now() }),
        async () => {
          Object.assign(entry, { outcome: "failed", settledMs: Date.now() });
          // A client that fails at once (closed after a failed assertion) must not spin the
          // load loops in microtasks: that starves timers and child-exit events, and the
          // worker hangs instead of failing.
          await new Promise((resolve) => setTimeout(resolve, 20));
        },
      );
    };

    const onReplica = client(replica.url);
    const onNode = nodes.map((node) => client(node.url));
    await write(onReplica, "replica", "warm-up");

    let writerAt = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const writer = nodes[writerAt]!;
      const standby = nodes[1 - writerAt]!;
      const onStandby = onNode[1 - writerAt]!;
      await until("the standby follows the writer", async () => (await health(standby)).shards[0]!.writer === (await health(writer)).nodeId);
      const epochBefore = (await health(standby)).shards[0]!.epoch;

      writer.pause();
      // Forwarded to the frozen writer: they hang there until re-routed.
      const inFlight = [write(onReplica, "replica", `r${round}-in-flight`), write(onStandby, "standby", `s${round}-in-flight`)];
      await until("the standby takes over", async () => (await health(standby)).role === "writer");
      const takeoverMs = Date.now();
      // Load through both live nodes while the old writer stays frozen.
      loading = true;
      const loop = async (connection: CairnClient, via: string) => {
        for (let i = 0; loading; i++) await write(connection, via, `${via}${round}-${i}`);
      };
      const loops = [loop(onReplica, "replica"), loop(onStandby, "standby")];
      await until("the in-flight writes settle", () => writes.every((entry) => entry.outcome !== "pending" || !entry.body.endsWith("in-flight")), FROZEN_AFTER_TAKEOVER_MS);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      loading = false;
      await Promise.all([...loops, ...inFlight]);
      step(`round ${round}: the load and the in-flight writes settled`);
      const stillFrozenMs = Date.now();
      writer.resume();

      for (const via of ["replica", "standby"]) {
        const afterTakeover = writes.filter((entry) => entry.via === via && entry.outcome === "acknowledged" && entry.settledMs! >= takeoverMs - 2_000);
        expect(afterTakeover.length, `writes through the ${via} succeeded while the old writer was frozen`).toBeGreaterThan(0);
        const first = Math.min(...afterTakeover.map((entry) => entry.settledMs!));
        console.log(`failover round ${round}: first write through the ${via} acknowledged ${first - takeoverMs} ms after the takeover was seen`);
        expect(first).toBeLessThan(stillFrozenMs);
      }
      for (const entry of writes.filter((candidate) => candidate.body.startsWith(`r${round}-in-flight`) || candidate.body.startsWith(`s${round}-in-flight`))) {
        expect(entry.outcome, `${entry.body} (forwarded to the frozen writer) was re-routed`).toBe("acknowledged");
      }
      // The old writer is fenced when it resumes, and follows the new epoch.
      await until("the old writer follows the new epoch", async () => (await health(writer)).shards[0]!.epoch > epochBefore && (await health(writer)).role !== "writer");
      // Its own clients write again too (forwarded to the new writer).
      await write(onNode[writerAt]!, "old-writer", `w${round}-after-resume`);
      step(`round ${round}: a write through the resumed old writer settled`);
      writerAt = 1 - writerAt;
    }

    // Every acknowledged write exactly once; nothing in the log that no client sent.
    const final = await onReplica.query(api.notes.list, { channel: "load" });
    const counts = new Map<string, number>();
    for (const body of final) counts.set(body, (counts.get(body) ?? 0) + 1);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
    expect(writes.filter((entry) => entry.outcome === "acknowledged" && !counts.has(entry.body)).map((entry) => entry.body)).toEqual([]);
    expect(final.filter((body) => !writes.some((entry) => entry.body === body))).toEqual([]);
    expect(writes.filter((entry) => entry.outcome === "failed").map((entry) => entry.body)).toEqual([]);
  }, 60_000 + ROUNDS * 60_000);
});
