import { CairnError, isCasConflict } from "../base/index.js";
import { bucketLayout } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * Steps a command that fills a new deployment's root shares (`cairn restore --to`,
 * `cairn branch`): the root must hold nothing, and the schema catalog comes across whole.
 */

/** RESTORE_TARGET_NOT_EMPTY naming the first key, when `target` holds anything; `doing` says what the user ran ("restore", "branch"). */
export async function refuseNonEmptyTarget(target: ObjectStore, doing: string): Promise<void> {
  for await (const entry of target.list("")) {
    throw new CairnError(
      "RESTORE_TARGET_NOT_EMPTY",
      `${target.description} is not empty (it holds ${entry.key}); ${doing} into an empty bucket or prefix; nothing was changed`,
      { details: { key: entry.key } },
    );
  }
}

/** Places the `restoring` mark (create-only): nodes refuse the root until globals exist; RESTORE_UNFINISHED if another run placed one first. */
export async function placeMark(target: ObjectStore, mark: object): Promise<void> {
  try {
    await target.create(bucketLayout.restoring(), new TextEncoder().encode(JSON.stringify(mark)));
  } catch (error) {
    if (!isCasConflict(error)) throw error;
    throw new CairnError("RESTORE_UNFINISHED", `another restore or branch started into ${target.description} at the same moment; nothing was changed`);
  }
}

/** Copies the object at `key` (create-only), if there is one. */
export async function copyObject(from: ObjectStore, to: ObjectStore, key: string): Promise<void> {
  const result = await from.get(key);
  if (result === null) return;
  if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
  await to.create(key, result.body);
}
