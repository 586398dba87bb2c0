/** Garbage collection of segments and snapshots, and the consumer watermarks that hold it back. */
export { CONSUMER_TTL_MS_DEFAULT, ConsumerWatermarks } from "./ConsumerWatermarks.js";
export { collectGarbage, planGarbage, type GarbagePlan, type GarbageReport } from "./collectGarbage.js";
export { planRetention, RETAINED_SNAPSHOT_SPACING_MS_DEFAULT, type RetentionPlan } from "./retentionPlan.js";
