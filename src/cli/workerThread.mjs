// The entry of the CLI's worker threads: `cairn serve`'s node (serveInWorker.ts),
// `cairn reshard` (reshardCommand.ts), `cairn restore`/`export` (historyWorker.ts) and
// `cairn import` (importWorker.ts), each
// naming its module in workerData.module. Plain
// JavaScript: a worker does not inherit the main thread's loader. In the published
// package the module is compiled JavaScript beside this file; in a source checkout (run
// through tsx) it is TypeScript, and the worker registers tsx itself first.
import { existsSync } from "node:fs";
import { workerData } from "node:worker_threads";

const WORKER_MODULES = ["serveWorker", "reshardWorker", "historyWorker", "importWorker"];
const name = workerData?.module;
if (!WORKER_MODULES.includes(name)) throw new Error(`workerThread.mjs: workerData.module must be one of ${WORKER_MODULES.join(", ")}, not ${String(name)}`);
const compiled = new URL(`./${name}.js`, import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(`./${name}.ts`);
}
