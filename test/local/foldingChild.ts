/**
 * Child process of crashMidFold.test.ts: opens the store at argv[2], replays every batch
 * of the deterministic stream (foldingStream.ts) after the file's position, prints
 * "applied <seqno>", folds everything in one transaction, prints "folded <seqno>", exits.
 * The parent kills it with SIGKILL somewhere in between.
 */
import { LocalStore } from "../../src/local/index.js";
import { DEPLOYMENT } from "./localFixtures.js";
import { STREAM_BATCHES, streamBatch } from "./foldingStream.js";

const store = LocalStore.open({
  path: process.argv[2]!,
  shard: 0,
  deploymentId: DEPLOYMENT,
  // Only the explicit flush folds: one transaction holding every replayed batch.
  fold: { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 },
});
for (let seqno = store.meta().appliedSeqno + 1; seqno < STREAM_BATCHES; seqno++) store.apply(streamBatch(seqno));
process.stdout.write(`applied ${store.meta().appliedSeqno}\n`);
await store.flush();
process.stdout.write(`folded ${store.durableMeta().appliedSeqno}\n`);
store.close();
