/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of three real node processes over six shards
 * in a directory bucket. After writes to every shard, one node is SIGKILLed; the others
 * take its shards and go on writing; then it is restarted with the same node id and the
 * same local directory. It rejoins without replaying whole logs: for every shard, its
 * local copy starts at least where its health said it was before the kill, every segment
 * it replays (its engines' catch-up progress events) or even GETs lies past that copy
 * (but for one GET of the copy's last segment, the witness that the bucket has it), and
 * it rebuilds nothing. It then writes its shards again and serves every acknowledged
 * write. A SIGKILL may cost the few segments the local store had not folded into its file
 * yet (the bucket has them); after a graceful stop (SIGTERM) and restart the local copy
 * starts at least where health said it was.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { assignment } from "../../src/fleet/index.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { functions } from "../functions/shardedApp.js";
import { converged, directoryStore, fleetClient, type FleetNode, health, metric, query, segmentCounts, startFleetNode, stopEverything, within } from "./fleetHarness.js";

const api = apiOf<typeof functions>();
const SHARDS = 6;
/** Rounds of one write to every shard, before the kill and while the node is down. */
const ROUNDS_BEFORE = 8;
const ROUNDS_WHILE_DOWN = 4;

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-restart-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

const channelOn = (lane: number) => Array.from({ length: 256 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, SHARDS) === lane)!;

/**
 * What a restarted node's start printed: per shard, the local copy it opened and the
 * segments it replayed before serving — none at or below that copy. Also its GETs so far.
 */
async function resumedFromLocalCopy(node: FleetNode, appliedBefore: readonly number[], segments: readonly number[], how: string): Promise<{ localSeqnos: number[]; gets: number }> {
  const gets = await metric(node, "cairn_store_requests_total", { operation: "get" });
  const lines = node.output;
  expect(lines).not.toMatch(/event local-rebuilt/);
  expect(lines).not.toMatch(/restored the snapshot/);
  const localSeqnos: number[] = [];
  for (let shard = 0; shard < SHARDS; shard++) {
    const copy = new RegExp(`shard ${shard}: local copy through seqno (-?\\d+)`).exec(lines);
    expect(copy, `the start names shard ${shard}'s local copy`).not.toBeNull();
    const localSeqno = Number(copy![1]);
    localSeqnos.push(localSeqno);
    const replayed = [...lines.matchAll(new RegExp(`event progress shard ${shard} replay seqno (\\d+)`, "g"))].map((match) => Number(match[1]));
    expect(replayed.filter((seqno) => seqno <= localSeqno), `shard ${shard}: segments replayed that the local copy had`).toEqual([]);
    const fetched = [...lines.matchAll(new RegExp(`get segment ${shard} (\\d+)`, "g"))].map((match) => Number(match[1]));
    // One GET of the copy's last segment may witness that the bucket still has it (checkLocalPosition); none below it.
    expect(fetched.filter((seqno) => seqno < localSeqno), `shard ${shard}: segments fetched that the local copy had`).toEqual([]);
    expect(fetched.filter((seqno) => seqno === localSeqno).length, `shard ${shard}: GETs of the local copy's last segment`).toBeLessThanOrEqual(1);
    console.log(
      `fleet restart after ${how}: shard ${shard}: local copy through ${localSeqno} (health said ${appliedBefore[shard]} before); ${replayed.length} segments replayed and ${fetched.length} GETs of segment slots, of the log's ${segments[shard]} segments`,
    );
  }
  return { localSeqnos, gets };
}

describe("a fleet node restarted from its local files", () => {
  it("resumes every shard from its local copy, replays only what it missed, and writes its shards again", { timeout: 120_000 }, async () => {
    const store = directoryStore(join(root, "bucket"));
    const spec = (nodeId: string) => ({
      nodeId,
      store,
      local: join(root, `local-${nodeId}`),
      app: "test/functions/shardedApp.ts",
      numShards: SHARDS,
      extra: { logEngineEvents: ["progress", "local-rebuilt"] as const, logSegmentGets: true },
    });
    const first = await startFleetNode(spec("alpha"));
    const nodes = [first, ...(await Promise.all(["beta", "gamma"].map((nodeId) => startFleetNode(spec(nodeId)))))];
    const target3 = assignment(SHARDS, nodes.map((node) => node.nodeId));
    await within("three nodes converge", () => converged(nodes, target3));
    const [alpha, beta, gamma] = nodes as [(typeof nodes)[0], (typeof nodes)[0], (typeof nodes)[0]];

    // Writes to every shard through alpha and beta (gamma's own shards among them).
    const clients = [fleetClient([alpha, beta], 0), fleetClient([alpha, beta], 1)];
    let n = 0;
    const acknowledged: number[] = [];
    const writeRounds = async (rounds: number) => {
      for (let round = 0; round < rounds; round++) {
        await Promise.all(
          Array.from({ length: SHARDS }, async (_, shard) => {
            const value = ++n;
            await clients[shard % clients.length]!.mutation(api.messages.send, { channel: channelOn(shard), n: value, body: `n${value}` });
            acknowledged.push(value);
          }),
        );
      }
    };
    const everyWriteOnEveryNode = (on: readonly FleetNode[]) => {
      const expected = [...acknowledged].sort((a, b) => a - b);
      return within("every acknowledged write is on every node, once", async () => {
        const views = await Promise.all(on.map((node) => query<number[]>(node, "messages:byN", { order: "asc", take: 10_000 })));
        return views.every((view) => JSON.stringify(view) === JSON.stringify(expected));
      });
    };
    await writeRounds(ROUNDS_BEFORE);
    // Gamma has applied everything acknowledged so far once its frontier shows the last write.
    await within("gamma serves every acknowledged write", async () => (await query<number[]>(gamma, "messages:byN", { order: "asc", take: 10_000 })).length === acknowledged.length);
    const before = await health(gamma);
    const appliedBefore = before.shards.map((shard) => shard.appliedSeqno);
    console.log(`fleet restart: gamma's applied seqnos before the kill ${JSON.stringify(appliedBefore)}`);

    await gamma.kill();
    const survivors = [alpha, beta];
    await within("the survivors take gamma's shards", () => converged(survivors, assignment(SHARDS, ["alpha", "beta"])));
    await writeRounds(ROUNDS_WHILE_DOWN);
    const segments = await segmentCounts(await store.open(), SHARDS);
    const totalSegments = segments.reduce((sum, count) => sum + count, 0);

    const restartedMs = Date.now();
    const again = await startFleetNode(spec("gamma"));
    console.log(`fleet restart: gamma serves again after ${Date.now() - restartedMs} ms (waiting out its previous run's presence entry included)`);
    const start = await resumedFromLocalCopy(again, appliedBefore, segments, "SIGKILL");
    // A SIGKILL loses what the local store had not folded into its file yet (the bucket has it): a few segments at most.
    for (let shard = 0; shard < SHARDS; shard++) expect(start.localSeqnos[shard], `shard ${shard}: gamma kept a local copy`).toBeGreaterThanOrEqual(0);
    console.log(`fleet restart: ${start.gets} GETs of any object from start to serving (manifests, catalog, presence entries, segment slots); the logs hold ${totalSegments} segments`);
    const all = [alpha, beta, again];
    await within("gamma writes its shards again", () => converged(all, target3), restartedMs);
    console.log(`fleet restart: epochs after the rejoin ${JSON.stringify((await health(again)).shards.map((shard) => shard.epoch))}`);
    await writeRounds(1);
    await everyWriteOnEveryNode(all);

    // A graceful stop folds everything into the local files: the restart resumes exactly where the node stopped.
    const beforeStop = (await health(again)).shards.map((shard) => shard.appliedSeqno);
    await again.stop();
    await within("the survivors take gamma's shards after its graceful stop", () => converged(survivors, assignment(SHARDS, ["alpha", "beta"])));
    await writeRounds(ROUNDS_WHILE_DOWN);
    const segmentsNow = await segmentCounts(await store.open(), SHARDS);
    const third = await startFleetNode(spec("gamma"));
    const resumed = await resumedFromLocalCopy(third, beforeStop, segmentsNow, "SIGTERM");
    for (let shard = 0; shard < SHARDS; shard++) expect(resumed.localSeqnos[shard], `shard ${shard}: the local copy keeps what gamma had applied`).toBeGreaterThanOrEqual(beforeStop[shard]!);
    const final = [alpha, beta, third];
    await within("gamma writes its shards again after the graceful restart", () => converged(final, target3));
    await writeRounds(1);
    await everyWriteOnEveryNode(final);
  });
});
