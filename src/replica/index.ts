/** The replica layer's public surface: the tailer, wake hints, the lease and layout watchers and the node registry. */
export { LayoutWatcher, type LayoutRetired } from "./LayoutWatcher.js";
export { LeaseWatcher } from "./LeaseWatcher.js";
export { liveNodes, NodeRegistry, type NodeEntry, type NodeRole } from "./NodeRegistry.js";
export { ShardTailer, type TailerTuning } from "./ShardTailer.js";
export { WakeHintSender, type WakeHint } from "./WakeHintSender.js";
