// The entry of `cairn reshard`'s worker thread (reshardCommand.ts). Plain JavaScript: a
// worker does not inherit the main thread's tsx loader, so it registers tsx itself and
// then loads the TypeScript worker.
import { register } from "tsx/esm/api";

register();
await import("./reshardWorker.ts");
