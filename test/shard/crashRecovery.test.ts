/**
 * Scenario: a node crashes while its local store still holds applied segments in memory,
 * some of them in a fold that may or may not commit. The restarted node must resume
 * exactly from the file's last committed fold: it reads the segments after it (and the
 * one before, to confirm its position), applies each once, and ends with the writer's
 * state. Against the in-memory bucket and the S3 test endpoint.
 */
import { describe, expect, it } from "vitest";
import { LocalStore } from "../../src/local/index.js";
import { parseSegmentSeqno } from "../../src/manifest/bucketLayout.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { type HarnessNode, harnessPerTest, insertUnit, type ShardHarness } from "../support/shardHarness.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";

const INDEX = 1;

async function commitIndexed(writer: HarnessNode, harness: ShardHarness, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const id = harness.newId();
    const unit = insertUnit(writer.engine, id, { index });
    await writer.engine.commit({ ...unit, indexWrites: [{ indexId: INDEX, key: documentIndexKey([index], 0, id), docId: id }] });
  }
}

/** Everything a reader can see at `ts`: every document through the index, in order. */
function visibleState(node: HarnessNode, ts: number): unknown {
  return node.local.indexScan(INDEX, { start: new Uint8Array(0), end: null }, ts, "asc", 10_000).map((row) => [row.id, row.value, row.docTs]);
}

for (const factory of BUCKET_FACTORIES) {
  describe(`crash recovery of the local overlay on '${factory.name}'`, () => {
    const newHarness = harnessPerTest(factory);

    const crashes = {
      "before any fold committed": async () => undefined,
      "with a fold in flight": async (node: HarnessNode) => {
        void node.local.flush().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 1));
      },
    } as const;

    for (const [when, beforeCrash] of Object.entries(crashes)) {
      it(`resumes from the last committed fold after a crash ${when}`, async () => {
        const harness = await newHarness();
        const writer = await harness.writer("writer");
        await commitIndexed(writer, harness, 12);
        const reader = await harness.node("reader", {}, { fold: { minRows: 0, delayMs: 0 } });
        // Part of the log is folded; what follows stays in memory until the crash.
        await reader.local.flush();
        const folded = reader.local.durableMeta().appliedSeqno;
        await commitIndexed(writer, harness, 4);
        await reader.engine.catchUpToTail();
        const applied = reader.local.meta().appliedSeqno;
        expect(applied).toBeGreaterThan(folded);
        await beforeCrash(reader);
        await harness.crash(reader);
        const file = LocalStore.open({ path: harness.localPath("reader"), shard: 0, deploymentId: harness.deploymentId });
        const fileAt = file.meta().appliedSeqno;
        file.close();
        expect(fileAt === folded || fileAt === applied, `file at ${fileAt}: all of a fold or none`).toBe(true);
        if (when === "before any fold committed") expect(fileAt).toBe(folded);

        await commitIndexed(writer, harness, 3);
        const restarted = await harness.node("reader");
        const tail = writer.engine.position.nextSeqno;
        const segmentReads = restarted.store.reads
          .map((key) => parseSegmentSeqno(0, key))
          .filter((seqno): seqno is number => seqno !== null && seqno < tail);
        // One GET confirms the file's position; then every later segment exactly once.
        const expected = Array.from({ length: tail - (fileAt + 1) }, (_, offset) => fileAt + 1 + offset);
        expect(segmentReads).toEqual([fileAt, ...expected]);
        expect(restarted.engine.position).toEqual(writer.engine.position);
        const ts = writer.engine.readTs;
        expect(visibleState(restarted, ts)).toEqual(visibleState(writer, ts));
        expect(visibleState(restarted, ts)).toHaveLength(19);
      });
    }
  });
}
