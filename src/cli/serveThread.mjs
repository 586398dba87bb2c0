// The entry of `cairn serve`'s worker thread (serveInWorker.ts). Plain JavaScript: a
// worker does not inherit the main thread's loader. In the published package the worker
// is compiled JavaScript beside this file; in a source checkout (run through tsx) it is
// TypeScript, and the worker registers tsx itself first.
import { existsSync } from "node:fs";

const compiled = new URL("./serveWorker.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./serveWorker.ts");
}
