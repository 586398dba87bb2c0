/**
 * A child process of fsKeyLocks.test.ts: a real lock holder in another process. It opens
 * the directory store given on the command line and runs one casPut of `key` (with the
 * etag it reads), pausing inside the key's lock, just before the rename, where it prints
 * `locked <pid>`. Then, by mode:
 * - `hold`: keeps the lock until its stdin is closed, finishes the casPut, prints `done`;
 *   a test that dies closes the pipe, so a holder never outlives its test.
 * - `exit`: exits at once without releasing the lock, as a crashed holder would
 *   (`process.exit` runs no `finally` blocks).
 */
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";

const [root, key, mode] = process.argv.slice(2);
if (root === undefined || key === undefined || (mode !== "hold" && mode !== "exit")) {
  throw new Error("usage: fsLockWorker <root> <key> hold|exit");
}

const store = new FsObjectStore(root, {
  beforeCasRename: async () => {
    process.stdout.write(`locked ${process.pid}\n`);
    if (mode === "exit") process.exit(0);
    for await (const _chunk of process.stdin) {
      // Drain until the parent closes the pipe: that is the signal to release.
    }
  },
});
const current = await store.get(key);
if (current === null || current === "not-modified") throw new Error(`${key} is missing`);
await store.casPut(key, new TextEncoder().encode(`written by child ${process.pid}`), current.etag);
await store.close();
process.stdout.write("done\n");
