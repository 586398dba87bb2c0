import { CairnError, systemRandom } from "../base/index.js";
import { globalsObject, type Globals } from "../manifest/index.js";
import { openObjectStore } from "../objectstore/index.js";
import { formatDuration } from "./pointInTime.js";

/**
 * `cairn retention [--set <duration>]`: prints (or sets) how far back every past state of
 * the deployment stays restorable. It lives in globals, so every writer of every shard
 * keeps the same window; nodes take a new value when they next open the deployment.
 */
export async function retentionCommand(options: { readonly store: string; readonly set?: number }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const say = (line: string) => process.stdout.write(`${line}\n`);
    let before: Globals | null = null;
    const after = await globalsObject(store, systemRandom).update((current) => {
      before = current;
      if (current === null || options.set === undefined || options.set === current.retentionMs) return null;
      const { version: _version, nonce: _nonce, ...fields } = current;
      return { ...fields, retentionMs: options.set };
    });
    if (after === null || before === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing)`);
    const was = (before as Globals).retentionMs;
    if (after.value.retentionMs === was) {
      say(`retention of deployment ${after.value.deploymentId}: ${formatDuration(was)}`);
      return;
    }
    say(
      `retention of deployment ${after.value.deploymentId}: ${formatDuration(was)} → ${formatDuration(after.value.retentionMs)} ` +
        `(running nodes take it when they next open the deployment)`,
    );
  } finally {
    await store.close();
  }
}
