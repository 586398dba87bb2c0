import { join } from "node:path";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { openObjectStore } from "../../src/objectstore/index.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const app = App.fromModule(historyApp, "history test app");
let readers = 0;

/**
 * Every note's channel, n and body, in a stable order, as a writer of the deployment at
 * `bucket` reads them: the store opened as a node opens it (a branch's root with its parent),
 * its local files in a fresh folder under `localRoot`.
 */
export async function notesIn(bucket: string, localRoot: string): Promise<string[]> {
  const store = await openObjectStore(bucket);
  const sharded = await ShardedStore.open({ store, localDirectory: join(localRoot, `reader-${readers++}`), nodeId: `reader-${readers}`, mustExist: true });
  try {
    await sharded.acquireAll();
    const runtime = await shardedRuntime(sharded, store, app, systemRandom);
    const notes = (await runtime.runQuery("notes:all", {})).value as { channel: string; n: number; body: string }[];
    return notes.map((note) => `${note.channel}/${note.n}: ${note.body}`).sort();
  } finally {
    await sharded.close();
    await store.close();
  }
}
