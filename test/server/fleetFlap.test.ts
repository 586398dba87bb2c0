/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of three real node processes over six shards
 * in a directory bucket (beat 250 ms, presence TTL 1.5 s, lease TTL 3 s); one node flaps,
 * the two others are steady, and a client keeps writing to the steady nodes' shards.
 * 1. Up one beat, down one beat: the flapping process is SIGSTOPped for a beat and
 *    SIGCONTed for a beat, over and over. Its presence entry and its leases outlive a
 *    beat, so the live set never changes: no shard changes hands, its own included.
 * 2. Away long enough to lose its leases, back for one beat, over and over: its shards
 *    go to the steady nodes while it is away (and may come back while it is up); the
 *    steady nodes' own shards never move — their writer and epoch stay the same on every
 *    health sample of both steady nodes.
 * Afterwards the fleet converges to the rendezvous assignment of all three again and
 * every acknowledged write is on every node, once. Live sets and epoch changes are
 * printed, not asserted beyond that.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { assignment } from "../../src/fleet/index.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { functions } from "../functions/shardedApp.js";
import { converged, directoryStore, FAST, fleetClient, type FleetNode, health, query, startFleetNode, stopEverything, within } from "./fleetHarness.js";

const api = apiOf<typeof functions>();
const SHARDS = 6;
const BEAT_MS = FAST.fleet.beatMs;
/** Phase 1: beats up and down. Phase 2: away past the lease (3 s) and the clock skew, then back for a beat. */
const SHORT_FLAPS = 8;
const LONG_FLAPS = 2;
const AWAY_MS = FAST.engineTuning.leaseTtlMs + FAST.maxClockSkewMs + 4 * BEAT_MS;

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-flap-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

const channelOn = (lane: number) => Array.from({ length: 256 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, SHARDS) === lane)!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a flapping fleet node", () => {
  it("moves none of the steady nodes' shards, whether it flaps by a beat or by more than its lease", { timeout: 120_000 }, async () => {
    const store = directoryStore(join(root, "bucket"));
    const spec = (nodeId: string) => ({ nodeId, store, local: join(root, `local-${nodeId}`), app: "test/functions/shardedApp.ts", numShards: SHARDS });
    const first = await startFleetNode(spec("alpha"));
    const nodes = [first, ...(await Promise.all(["beta", "gamma"].map((nodeId) => startFleetNode(spec(nodeId)))))];
    const target3 = assignment(SHARDS, nodes.map((node) => node.nodeId));
    await within("three nodes converge", () => converged(nodes, target3));
    const flapper = nodes.reduce((most, node) => (target3.filter((owner) => owner === node.nodeId).length > target3.filter((owner) => owner === most.nodeId).length ? node : most));
    const steady = nodes.filter((node) => node !== flapper);
    const steadyShards = target3.flatMap((owner, shard) => (owner !== flapper.nodeId ? [shard] : []));
    const flapperShards = target3.flatMap((owner, shard) => (owner === flapper.nodeId ? [shard] : []));
    expect(steadyShards.length).toBeGreaterThan(0);
    const epochsAtStart = (await health(steady[0]!)).shards.map((shard) => shard.epoch);
    console.log(`fleet flap: assignment ${JSON.stringify(target3)}, epochs ${JSON.stringify(epochsAtStart)}; ${flapper.nodeId} flaps`);

    // Health of both steady nodes, sampled all along: writer and epoch of every shard, and the live set.
    const seen = new Map<number, Set<string>>(target3.map((_, shard) => [shard, new Set<string>()]));
    const liveSets = new Map<string, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const view of await Promise.all(steady.map((node) => health(node)))) {
          for (const shard of view.shards) seen.get(shard.shard)!.add(`${shard.writer}@${shard.epoch}`);
          const live = (view.fleet?.liveNodes ?? []).join(",");
          liveSets.set(live, (liveSets.get(live) ?? 0) + 1);
        }
        await sleep(100);
      }
    })();
    const changesSince = (what: string) => {
      const report = [...seen].map(([shard, values]) => `shard ${shard}: ${[...values].join(" ")}`).join("; ");
      console.log(`fleet flap: ${what}: ${report}; live sets seen (samples) ${JSON.stringify(Object.fromEntries(liveSets))}`);
    };

    // A client on the steady nodes keeps writing their shards.
    const client = fleetClient(steady, 0);
    const acknowledged: number[] = [];
    let writing = true;
    let n = 0;
    const writes = (async () => {
      while (writing) {
        const shard = steadyShards[n % steadyShards.length]!;
        const value = ++n;
        await client.mutation(api.messages.send, { channel: channelOn(shard), n: value, body: `n${value}` });
        acknowledged.push(value);
      }
    })();

    // 1. Up one beat, down one beat.
    for (let flap = 0; flap < SHORT_FLAPS; flap++) {
      flapper.child.kill("SIGSTOP");
      await sleep(BEAT_MS);
      flapper.child.kill("SIGCONT");
      await sleep(BEAT_MS);
    }
    changesSince(`after ${SHORT_FLAPS} flaps of a beat`);
    for (const [shard, values] of seen) expect([...values], `shard ${shard} while ${flapper.nodeId} flapped by a beat`).toEqual([`${target3[shard]}@${epochsAtStart[shard]}`]);

    // 2. Away past its lease, back for a beat.
    for (let flap = 0; flap < LONG_FLAPS; flap++) {
      flapper.child.kill("SIGSTOP");
      await sleep(AWAY_MS);
      flapper.child.kill("SIGCONT");
      await sleep(BEAT_MS);
    }
    flapper.child.kill("SIGSTOP");
    await sleep(AWAY_MS);
    changesSince(`after ${LONG_FLAPS} flaps past the lease`);
    flapper.child.kill("SIGCONT");
    await within("the fleet converges to the assignment of all three again", () => converged(nodes, target3));
    writing = false;
    await writes;
    sampling = false;
    await sampler;
    changesSince("at the end");
    for (const shard of steadyShards) expect([...seen.get(shard)!], `steady shard ${shard}`).toEqual([`${target3[shard]}@${epochsAtStart[shard]}`]);
    // The flapper's shards did move (away and back): its absence past the lease is seen.
    for (const shard of flapperShards) expect(seen.get(shard)!.size, `flapper's shard ${shard} changed hands`).toBeGreaterThan(1);
    console.log(`fleet flap: ${acknowledged.length} writes acknowledged on the steady nodes' shards meanwhile`);

    const expected = [...acknowledged].sort((a, b) => a - b);
    await within("every acknowledged write is on every node, once", async () => {
      const views = await Promise.all(nodes.map((node: FleetNode) => query<number[]>(node, "messages:byN", { order: "asc", take: 10_000 })));
      return views.every((view) => JSON.stringify(view) === JSON.stringify(expected));
    });
  });
});
