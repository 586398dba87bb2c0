import { join, resolve } from "node:path";
import { systemClock, systemRandom } from "../base/index.js";
import { ProcessLockFile } from "../objectstore/index.js";

/** The lock file in a node's --local directory. */
export const LOCAL_DIRECTORY_LOCK_FILE = "cairn.lock";

/**
 * Takes the --local directory for this process (`serve`, `gc`): two processes on one
 * directory would share its node id and SQLite files, and each would take the other's
 * lease back at once as "its own". LOCAL_DIRECTORY_LOCKED names the process that has
 * it; a lock left by a process that crashed is taken over.
 */
export function lockLocalDirectory(directory: string): Promise<ProcessLockFile> {
  const absolute = resolve(directory);
  return ProcessLockFile.acquire(join(absolute, LOCAL_DIRECTORY_LOCK_FILE), `the local directory ${absolute}`, { clock: systemClock, random: systemRandom });
}
