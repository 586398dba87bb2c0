import type { ActionRun, MutationRun, RecordedQueryRun, UserIdentity } from "../functions/index.js";
import type { Value } from "../model/index.js";

/**
 * What the sync handler needs from the node it serves: running functions and reading
 * receipts. A writer implements it over its FunctionRuntime; a replica will run queries
 * locally and forward mutations to the writer.
 */
export interface SyncBackend {
  readonly deploymentId: string;
  /** The newest ts whose commits are applied locally (and announced to the handler). */
  readonly readTs: number;
  /** `describe`: return the result as a DiffableResult when it provably is one (FunctionRuntime QueryCallOptions). */
  runQuery(path: string, args: Value, options: CallerOptions & { readonly readTs: number; readonly describe?: boolean }): Promise<RecordedQueryRun>;
  runMutation(path: string, args: Value, options: MutationCallerOptions): Promise<MutationRun>;
  runAction(path: string, args: Value, options: CallerOptions): Promise<ActionRun>;
  /**
   * The committed result of mutation (clientId, seq) if `identity` wrote it, or null if
   * no such receipt is known here (or it is another identity's: nothing of it is told).
   */
  receipt(clientId: string, seq: number, identity: UserIdentity | null): { readonly ts: number; readonly value: Value } | null;
}

export interface MutationCallerOptions extends CallerOptions {
  readonly clientId?: string;
  readonly seq?: number;
  /** With (clientId, seq): every seq of the client up to this one is answered (see FunctionRuntime). */
  readonly ackedThrough?: number;
}

export interface CallerOptions {
  readonly identity: UserIdentity | null;
  /** Internal functions may be called (admin requests only; sessions never set it). */
  readonly internal?: boolean;
}
