/** The replica layer's public surface: the tailer, wake hints, the lease watcher and the node registry. */
export { LeaseWatcher } from "./LeaseWatcher.js";
export { NodeRegistry, type NodeRole } from "./NodeRegistry.js";
export { ShardTailer, type TailerTuning } from "./ShardTailer.js";
export { WakeHintSender, type WakeHint } from "./WakeHintSender.js";
