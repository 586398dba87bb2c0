/**
 * A child process of fsCrossProcess.test.ts. It opens the directory store given on the
 * command line and, `rounds` times, increments a counter object by compare-and-swap
 * (read, casPut with the read etag) and races `create` on key `created/<round>`. It
 * prints one JSON line: the counter values it wrote and the rounds whose create it won.
 */
import { isCasConflict } from "../../src/base/errors.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";

const [root, workerId, roundsText] = process.argv.slice(2);
if (root === undefined || workerId === undefined || roundsText === undefined) {
  throw new Error("usage: fsCasWorker <root> <workerId> <rounds>");
}
const rounds = Number(roundsText);
const store = new FsObjectStore(root);
const counterWrites: number[] = [];
const createdRounds: number[] = [];

for (let round = 0; round < rounds; round++) {
  const current = await store.get("counter");
  if (current === null || current === "not-modified") throw new Error("the counter object is missing");
  const value = JSON.parse(new TextDecoder().decode(current.body)) as { count: number; writer: string };
  const next = { count: value.count + 1, writer: `${workerId}:${round}` };
  try {
    await store.casPut("counter", new TextEncoder().encode(JSON.stringify(next)), current.etag);
    counterWrites.push(next.count);
  } catch (error) {
    if (!isCasConflict(error)) throw error;
  }
  try {
    await store.create(`created/${round}`, new TextEncoder().encode(`worker ${workerId}`));
    createdRounds.push(round);
  } catch (error) {
    if (!isCasConflict(error)) throw error;
  }
}
await store.close();
process.stdout.write(`${JSON.stringify({ workerId, counterWrites, createdRounds })}\n`);
