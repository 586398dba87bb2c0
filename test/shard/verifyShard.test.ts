/**
 * Scenario: `cairn verify`'s checks, on shards built by real writers and then damaged the
 * ways buckets get damaged: a flipped byte in a segment, a lost segment in the middle of
 * the log, a lost or corrupt snapshot part, a manifest whose tail hint points past the end
 * (segments lost), and a log start no snapshot covers. A sound shard — fenced leftovers,
 * strays below logStart and a GC'd prefix included — has no problems.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { verifyShard } from "../../src/shard/verifyShard.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { commitMany, harnessPerTest, type ShardHarness } from "../support/shardHarness.js";


async function replaceObject(h: ShardHarness, key: string, change: (body: Buffer) => Buffer): Promise<void> {
  const stored = await h.bucket.get(key);
  if (stored === null || stored === "not-modified") throw new Error(`${key} is missing`);
  await h.bucket.delete(key);
  await h.bucket.create(key, change(Buffer.from(stored.body)));
}

const flipMiddleByte = (body: Buffer) => {
  body[body.length >> 1]! ^= 0x01;
  return body;
};

describe.each(BUCKET_FACTORIES)("verifyShard on $name", (factory) => {
  const setup = harnessPerTest(factory);
  const verify = (h: ShardHarness) => verifyShard({ store: h.bucket, deploymentId: h.deploymentId, shard: 0 });

  it("finds nothing wrong with a sound shard: takeovers, a snapshot, a collected prefix and a stray", async () => {
    const h = await setup();
    const a = await h.writer("a");
    await commitMany(a, h, 4);
    await a.engine.relinquish();
    const b = await h.writer("b");
    await commitMany(b, h, 3);
    await b.engine.snapshotNow();
    await commitMany(b, h, 2);
    await b.engine.collectGarbageNow();
    await h.bucket.create(bucketLayout.segment(0, 1), new TextEncoder().encode("a stray below logStart"));
    const report = await verify(h);
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ epoch: 2, tail: b.engine.position.nextSeqno, straysBelowLogStart: 1 });
    expect(report.snapshot).toMatchObject({ documents: 7 });
    expect(report.segmentsChecked).toBe(report.tail! - report.logStart!);
  });

  it("reports a flipped byte, a gap, a damaged snapshot, a tail hint past the end, and an uncovered log start", async () => {
    const h = await setup();
    const a = await h.writer("a");
    await commitMany(a, h, 3);
    const snapshot = (await a.engine.snapshotNow())!;
    await commitMany(a, h, 4);
    await a.engine.heartbeat(); // tail hint = the last segment
    const last = a.engine.position.nextSeqno - 1;
    await replaceObject(h, bucketLayout.segment(0, 2), flipMiddleByte);
    await h.bucket.delete(bucketLayout.segment(0, last - 1));
    await replaceObject(h, bucketLayout.snapshotPart(snapshot.key, 0), flipMiddleByte);
    const report = await verify(h);
    const problems = report.problems.join("\n");
    expect(problems).toMatch(/segment 2 of shard 0 is invalid: checksum mismatch/);
    expect(problems).toMatch(new RegExp(`beyond a gap at seqno ${last - 1}`));
    expect(problems).toMatch(/snapshot at \d+: .*checksum mismatch/);
    expect(problems).toMatch(/tail hint \d+ is beyond the log's last segment/);

    const manifest = new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(1));
    await manifest.load();
    await manifest.updateAsOwner({ nodeId: "a", epoch: 1 }, (fields) => ({ ...fields, logStart: 3, snapshot: null }));
    expect((await verify(h)).problems.join("\n")).toMatch(/the log starts at 3 but no snapshot covers/);
  });
});
