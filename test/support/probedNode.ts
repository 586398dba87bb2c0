/**
 * A writer node in a process of its own, on a directory bucket, serving the sync test
 * app — for tests about the process itself: that client bytes never end it, and how much
 * heap it holds. It prints `serving at <url> ` like `cairn serve`; run with
 * `--expose-gc`, SIGUSR2 makes it print `heap <heapUsed bytes>` after a full
 * collection. SIGTERM stops it ("stopped"). Argument: the directory to use.
 */
import { join } from "node:path";
import { App } from "../../src/functions/App.js";
import { FsObjectStore } from "../../src/objectstore/index.js";
import { startNode } from "../../src/server/startNode.js";
import * as syncApp from "../sync/syncApp.js";

const directory = process.argv[2]!;
const store = new FsObjectStore(join(directory, "bucket"));
const node = await startNode({
  store,
  localDirectory: join(directory, "local"),
  app: App.fromModule(syncApp, "sync test app"),
  nodeId: "probed-node",
  port: 0,
  host: "127.0.0.1",
  adminKey: "probe-admin-key",
  verifier: null,
  webApp: null,
  log: (line) => process.stdout.write(`log: ${line}\n`),
});
process.stdout.write(`serving at ${node.url} \n`);

const gc = (globalThis as { gc?: () => void }).gc;
process.on("SIGUSR2", () => {
  // Several passes: weak references and finalizers free more on the next.
  for (let pass = 0; pass < 4; pass++) gc?.();
  process.stdout.write(`heap ${process.memoryUsage().heapUsed}\n`);
});
process.once("SIGTERM", () => {
  void (async () => {
    await node.stop();
    await store.close();
    process.stdout.write("stopped\n");
    process.exit(0);
  })();
});
