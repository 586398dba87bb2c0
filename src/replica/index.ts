/** The replica layer's public surface: the tailer and the lease and layout watchers. */
export { LayoutWatcher, type LayoutRetired } from "./LayoutWatcher.js";
export { LeaseWatcher, type TakeoverEngine } from "./LeaseWatcher.js";
export { ShardTailer, type TailerTuning, type WakeHint } from "./ShardTailer.js";
