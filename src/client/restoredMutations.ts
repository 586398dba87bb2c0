import { CairnError, MUTATION_BATCH_ENTRIES_MAX } from "../base/index.js";
import type { ClientMessage } from "../sync/protocol.js";
import { describeIdentity, type AuthIdentity } from "./AuthIdentity.js";
import type { OutboxMutation } from "./OutboxRecord.js";

/**
 * How mutations restored from an outbox go out and fail. They go out as MutationBatch
 * frames: the server runs a batch's entries in order and stops at the first transient
 * failure (the rest answer MUTATION_NOT_RUN and are re-sent), so a reload never applies
 * a later mutation before an earlier one that failed on the way. Nobody awaits them, so
 * a definitive failure is reported through the client's onError instead, as is a
 * mutation held because the client is signed in as another identity than its own (a
 * mutation of this session held so is reported the same way).
 */

type Frame = ClientMessage;

/** `frames` in order, with each run of consecutive restored Mutation frames merged into MutationBatch frames. */
export function batchRestoredMutations(frames: readonly Frame[], isRestored: (requestId: number) => boolean): Frame[] {
  const result: Frame[] = [];
  for (const frame of frames) {
    const last = result[result.length - 1];
    if (frame.type !== "Mutation" || !isRestored(frame.requestId)) {
      result.push(frame);
    } else if (last?.type === "MutationBatch" && last.entries.length < MUTATION_BATCH_ENTRIES_MAX) {
      last.entries.push(entryOf(frame));
    } else {
      result.push({ type: "MutationBatch", entries: [entryOf(frame)] });
    }
  }
  return result;
}

/** The error a restored mutation's definitive failure is reported with: its own code, naming the mutation. */
export function restoredMutationFailed(mutation: OutboxMutation, error: unknown): CairnError {
  const cause = error as Partial<CairnError>;
  const code = typeof cause.code === "string" ? cause.code : "INTERNAL";
  return new CairnError(code, `the mutation ${mutation.path} (seq ${mutation.seq}) restored from the outbox failed and was removed from it: ${String(cause.message ?? error)}`, {
    cause: error,
    details: { ...cause.details, path: mutation.path, seq: mutation.seq, restored: true },
    ...(cause.data !== undefined ? { data: cause.data } : {}),
  });
}

/**
 * The report of mutations held because the app's auth (`signedInAs`) is not the identity
 * they were issued as: restored ones, or this session's made as a user (or sent once)
 * before the app signed out or in as another.
 */
export function identityMismatch(mutations: readonly Pick<OutboxMutation, "seq" | "path" | "issuedAs">[], signedInAs: AuthIdentity): CairnError {
  const issuedAs = [...new Set(mutations.map((mutation) => describeIdentity(mutation.issuedAs)))].join(", ");
  const seqs = mutations.map((mutation) => mutation.seq);
  return new CairnError(
    "OUTBOX_IDENTITY_MISMATCH",
    `${mutations.length} mutation(s) not answered (seqs ${seqs.join(", ")}) were issued as ${issuedAs} and the client is signed in as ${describeIdentity(signedInAs)}: they are held, never sent as another identity; sign in as theirs to send them, or drop them with discardPendingMutations`,
    { details: { seqs, paths: mutations.map((mutation) => mutation.path), issuedAs: mutations.map((mutation) => mutation.issuedAs), signedInAs } },
  );
}

/** What a discarded mutation of this session rejects with: it was held for its identity and never sent as another. */
export function discardedUnsent(mutation: Pick<OutboxMutation, "seq" | "path" | "issuedAs">): CairnError {
  return new CairnError(
    "OUTBOX_IDENTITY_MISMATCH",
    `the mutation ${mutation.path} (seq ${mutation.seq}) was issued as ${describeIdentity(mutation.issuedAs)}, held while the client was signed in as another identity, and discarded unsent by discardPendingMutations`,
    { details: { seqs: [mutation.seq], paths: [mutation.path], issuedAs: [mutation.issuedAs], discarded: true } },
  );
}

function entryOf(frame: Extract<Frame, { type: "Mutation" }>): Extract<Frame, { type: "MutationBatch" }>["entries"][number] {
  const { type: _type, ...entry } = frame;
  return entry;
}
