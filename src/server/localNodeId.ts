import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CairnError, type Random } from "../base/index.js";
import { isNodeId, NODE_ID_FORM } from "../model/index.js";

const NODE_ID_FILE = "node-id";

/**
 * The node id kept beside the local files: a node restarted on its local directory is
 * the same node, so it may take back a lease its previous run left behind (after a
 * crash) instead of waiting it out. Safety never rests on the id — every acquire moves
 * the epoch, which fences whatever ran before — only the wait does.
 */
export function localNodeId(localDirectory: string, random: Random): string {
  const path = join(localDirectory, NODE_ID_FILE);
  let text: string | null = null;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new CairnError("INVALID_ARGUMENT", `cannot read ${path}: ${(error as Error).message}`);
  }
  if (text !== null) {
    if (!isNodeId(text)) throw new CairnError("INVALID_ARGUMENT", `${path} does not hold a node id (${NODE_ID_FORM}); delete it to get a new one`);
    return text;
  }
  const id = `node-${Buffer.from(random.bytes(6)).toString("hex")}`;
  mkdirSync(localDirectory, { recursive: true });
  writeFileSync(path, `${id}\n`, { flag: "wx" });
  return id;
}
