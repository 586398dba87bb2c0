/** The shard engine, the sharded store over it, verification and resharding. */
export { ShardEngine, type EngineEvent, type EngineState } from "./ShardEngine.js";
export { ShardedStore } from "./ShardedStore.js";
export type { CommitResult, DocumentWrite, IndexWrite, PendingReadToken, ReadSet, ReceiptWrite, WriteUnit, WrittenKey } from "./WriteUnit.js";
export type { PendingRevision, PendingStamp } from "./PendingDocuments.js";
export type { PendingView } from "./PendingView.js";
export type { CatchUpReport, Vouching } from "./catchUp.js";
export { resolveTuning, type ShardEngineTuning } from "./engineOptions.js";
export { reshardObjectStore, type ReshardProgress, type ReshardReport } from "./reshardObjectStore.js";
export { verifyShard, type ShardVerification } from "./verifyShard.js";
export { RESTORE_SETTLED_AFTER_MS_DEFAULT, type StateAtProgress } from "./stateAt.js";
export { restoreObjectStore, type RestoreReport, type RestoreToProgress } from "./restoreObjectStore.js";
export { EXPORT_DOCUMENTS_FILE, EXPORT_FORMAT, EXPORT_MANIFEST_FILE, exportDeployment, type ExportProgress, type ExportReport } from "./exportDeployment.js";
export { restoreInPlace, type RestoreInPlaceProgress, type RestoreInPlaceReport } from "./restoreInPlace.js";
export { BRANCH_TTL_MS_DEFAULT, createBranch, type BranchProgress, type BranchReport } from "./createBranch.js";
export { deleteBranch, readBranchRegistration, renewBranch, type DeleteBranchReport } from "./branchLifecycle.js";
