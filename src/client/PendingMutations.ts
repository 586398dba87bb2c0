import { assert, MUTATION_BATCH_ENTRIES_MAX } from "../base/index.js";
import type { Value } from "../model/Value.js";
import type { JsonValue } from "../model/ValueJson.js";
import type { ClientMessage } from "../sync/protocol.js";
import { equalIdentities, sameIdentity, type AuthIdentity } from "./AuthIdentity.js";
import type { OutboxMutation, OutboxRecord } from "./OutboxRecord.js";
import { settleDecoded } from "./settleDecoded.js";

/**
 * The client's mutations that have not settled. Each has a requestId (per client) and a
 * seq (per clientId, from 1); (clientId, seq) is its receipt key on the server, so a
 * re-send after a reconnect is answered from the receipt and never applied twice.
 *
 * A mutation's lifecycle:
 *
 *   status          event                                              next
 *   saving          the outbox holds it durably, as it is (`saved`)    waiting  (only with an outbox)
 *   waitingForAuth  the app's auth is an identity it may go as         waiting
 *   waiting         the app's auth is an identity it may not go as     waitingForAuth
 *   waitingForAuth  discarded by the app                               (removed, nothing sent)
 *   waiting         claimed by the session's identity (`claim`)        saving   (with an outbox; without: stays waiting)
 *   waiting         sent (after ConnectAck, within the in-flight bound)  inFlight
 *   inFlight        connection lost                                    waiting  (re-sent with the same seq)
 *   inFlight        MutationResponse success / replayed                committed(ts)
 *   waiting         seq known in ConnectAck                            committed(ts)
 *   inFlight        MutationResponse failure, ProtocolError            (rejected, removed)
 *   inFlight        failure with an unknown outcome                    backingOff  (resends < MUTATION_RESENDS_MAX)
 *   backingOff      its backoff elapsed, or a reconnect                waiting  (re-sent with the same seq)
 *   committed       the client's version.ts ≥ ts                       (resolved, removed)
 *
 * With an outbox, a mutation starts `saving` and is sent only once the outbox holds it
 * (a crash before then loses it unsent, never sent and forgotten); mutations restored
 * from an outbox start `waitingForAuth` (`matchAuth` moves those of the app's identity
 * on), count as sent (the server may know them: they are held in Connect) and are
 * `restored` (nobody awaits them: their failure is reported).
 *
 * Identity: `issuedAs` is always the identity a mutation was, or will be, sent under, so
 * that a reload sends it as that identity and the server answers it from its receipt.
 * A mutation made anonymously and never sent is `claimable`: the session it first goes
 * out in claims it (`claim` sets `issuedAs` to the session's identity; with an outbox it
 * is `saving` again until a save holding the new identity lands, so it is never on the
 * wire under an identity the outbox does not hold). Any other mutation — issued as a
 * user, or sent once — goes out only as its own identity (`mayGoAs`): while the app's
 * auth is another, it waits for auth, whether it was restored or made in this session.
 * `sendable` stops at the first mutation held for auth, saving, or whose identity the
 * session has not confirmed, so no later mutation overtakes it.
 *
 * Invariants: the map holds mutations in seq order (insertion order), so the first one
 * not answered bounds `ackedThrough`; `revision` changes whenever the set of mutations,
 * the saved ones, the answered ones or an identity (a claim) change (the outbox is saved and
 * `pendingMutations` listeners told).
 */

export type MutationStatus =
  /** Waiting for the outbox to hold it durably before it may be sent. */
  | { readonly state: "saving" }
  /** Restored, and issued under another identity than the client's auth now: held until that identity signs in, or discarded. */
  | { readonly state: "waitingForAuth" }
  | { readonly state: "waiting" }
  | { readonly state: "inFlight" }
  /** Its outcome was unknown: it is re-sent once its backoff elapses (or on the next connection). */
  | { readonly state: "backingOff" }
  | { readonly state: "committed"; readonly ts: number; readonly value: unknown };

export interface PendingMutation {
  readonly requestId: number;
  readonly seq: number;
  readonly path: string;
  readonly args: JsonValue;
  /** The identity it was, or will be, sent under (restored: as the outbox recorded it). */
  issuedAs: AuthIdentity;
  /** Made anonymously and never sent: the session it first goes out in may claim it (`claim`). */
  claimable: boolean;
  status: MutationStatus;
  /** Whether OUTBOX_IDENTITY_MISMATCH named it already (it is reported once). */
  mismatchReported: boolean;
  /** Whether it went out on some connection: only those are held (the server may know them). */
  everSent: boolean;
  /** Times it was re-sent after an unknown outcome. */
  resends: number;
  /** Read back from an outbox after a reload: nobody awaits its promise. */
  readonly restored: boolean;
  readonly resolve: (value: Value) => void;
  readonly reject: (error: unknown) => void;
}

type MutationFrame = Extract<ClientMessage, { type: "Mutation" }>;

export class PendingMutations {
  private readonly byRequestId = new Map<number, PendingMutation>();
  private nextSeq = 1;
  private changes = 0;

  constructor(private clientId: string) {}

  /** The client id the mutations' receipts are keyed by (an outbox's, once restored). */
  get receiptClientId(): string {
    return this.clientId;
  }

  /** Changes whenever a mutation is added, saved, answered or removed. */
  get revision(): number {
    return this.changes;
  }

  /** `durable`: it waits `saving` until the outbox holds it. */
  create(requestId: number, path: string, args: JsonValue, durable: boolean, issuedAs: AuthIdentity): Promise<Value> {
    return new Promise<Value>((resolve, reject) => {
      const seq = this.nextSeq++;
      const status: MutationStatus = { state: durable ? "saving" : "waiting" };
      const claimable = issuedAs.kind === "anonymous";
      this.byRequestId.set(requestId, { requestId, seq, path, args, issuedAs, claimable, status, mismatchReported: false, everSent: false, resends: 0, restored: false, resolve, reject });
      this.changes++;
    });
  }

  /**
   * Takes an outbox's client id, numbering and unanswered mutations (before any
   * mutation of this client exists); `handlersOf` gives each its request id and settlers.
   */
  restore(record: OutboxRecord, handlersOf: (mutation: OutboxMutation) => Pick<PendingMutation, "requestId" | "resolve" | "reject">): void {
    assert(this.byRequestId.size === 0 && this.nextSeq === 1, "an outbox is restored before the client's first mutation");
    this.clientId = record.clientId;
    this.nextSeq = record.nextSeq;
    for (const mutation of record.mutations) {
      const { requestId, resolve, reject } = handlersOf(mutation);
      const { seq, path, args, issuedAs } = mutation;
      const status: MutationStatus = { state: "waitingForAuth" };
      this.byRequestId.set(requestId, { requestId, seq, path, args, issuedAs, claimable: false, status, mismatchReported: false, everSent: true, resends: 0, restored: true, resolve, reject });
    }
    this.changes++;
  }

  /** What the outbox holds: the id, the numbering and every mutation not answered. */
  record(): OutboxRecord {
    const mutations: OutboxMutation[] = [];
    for (const { seq, path, args, issuedAs, status } of this.byRequestId.values()) if (status.state !== "committed") mutations.push({ seq, path, args, issuedAs });
    return { clientId: this.clientId, nextSeq: this.nextSeq, mutations };
  }

  /**
   * The outbox holds `saved` durably: the mutations saving that it holds as they are (same
   * seq and identity: a save begun before a claim holds the old one) may be sent; whether
   * there were any.
   */
  saved(saved: OutboxRecord): boolean {
    const held = new Map(saved.mutations.map((mutation) => [mutation.seq, mutation.issuedAs]));
    let any = false;
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state !== "saving") continue;
      const issuedAs = held.get(mutation.seq);
      if (issuedAs === undefined || !equalIdentities(issuedAs, mutation.issuedAs)) continue;
      mutation.status = { state: "waiting" };
      any = true;
    }
    if (any) this.changes++;
    return any;
  }

  /** Every mutation whose promise has not settled, in seq order. */
  all(): readonly PendingMutation[] {
    return [...this.byRequestId.values()];
  }

  get(requestId: number): PendingMutation | undefined {
    return this.byRequestId.get(requestId);
  }

  /**
   * Mutations not on the wire wait for auth unless they may go as the client's auth
   * (`current`); whether any changed.
   */
  matchAuth(current: AuthIdentity): boolean {
    let any = false;
    for (const mutation of this.byRequestId.values()) {
      const { state } = mutation.status;
      if (state !== "waiting" && state !== "waitingForAuth") continue;
      const next = mayGoAs(mutation, current) ? "waiting" : "waitingForAuth";
      if (next === state) continue;
      mutation.status = { state: next };
      any = true;
    }
    if (any) this.changes++;
    return any;
  }

  /**
   * The waiting mutations `sendable` would reach that are claimable and not of
   * `claimant` (the identity the connection's session runs as, when it is the app's
   * auth; null: none) take it as theirs; with `durable` they are saving again, until the
   * outbox holds them so. Whether any changed.
   */
  claim(claimant: AuthIdentity | null, durable: boolean): boolean {
    if (claimant === null) return false;
    let any = false;
    for (const mutation of this.byRequestId.values()) {
      const { state } = mutation.status;
      if (state === "waitingForAuth" || state === "saving") break;
      if (state !== "waiting") continue;
      if (!mutation.claimable) {
        if (!mayGoIn(mutation, claimant)) break;
        continue;
      }
      if (equalIdentities(mutation.issuedAs, claimant)) continue;
      mutation.issuedAs = claimant;
      if (durable) mutation.status = { state: "saving" };
      any = true;
    }
    if (any) this.changes++;
    return any;
  }

  /**
   * The mutations that may be sent now, in seq order: waiting ones, up to the first held
   * — waiting for auth, saving, or of another identity than `session` (the identity the
   * connection's session runs as, null while not confirmed) — so none overtakes it.
   * Claim first (`claim`): a claimable mutation not of `claimant` is held here.
   */
  sendable(session: AuthIdentity | null, claimant: AuthIdentity | null): PendingMutation[] {
    const sendable: PendingMutation[] = [];
    for (const mutation of this.byRequestId.values()) {
      const { state } = mutation.status;
      if (state === "waitingForAuth" || state === "saving") break;
      if (state !== "waiting") continue;
      if (mutation.claimable ? claimant === null || !equalIdentities(mutation.issuedAs, claimant) : !mayGoIn(mutation, session)) break;
      sendable.push(mutation);
    }
    return sendable;
  }

  /** Mutations waiting for auth that `mismatched` picks and were not reported yet; they count as reported now. */
  takeUnreportedMismatches(mismatched: (mutation: PendingMutation) => boolean): PendingMutation[] {
    const taken: PendingMutation[] = [];
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state !== "waitingForAuth" || mutation.mismatchReported || !mismatched(mutation)) continue;
      mutation.mismatchReported = true;
      taken.push(mutation);
    }
    return taken;
  }

  /** Removes and returns the mutations waiting for auth that `chosen` picks (never one that may be on the wire). */
  discardWaitingForAuth(chosen: (mutation: PendingMutation) => boolean): PendingMutation[] {
    const discarded = [...this.byRequestId.values()].filter((mutation) => mutation.status.state === "waitingForAuth" && chosen(mutation));
    for (const mutation of discarded) this.byRequestId.delete(mutation.requestId);
    if (discarded.length > 0) this.changes++;
    return discarded;
  }

  inFlightCount(): number {
    let count = 0;
    for (const mutation of this.byRequestId.values()) if (mutation.status.state === "inFlight") count++;
    return count;
  }

  /**
   * The frame of a waiting mutation, with its original seq and the client's ackedThrough
   * (the server prunes those receipts and refuses those seqs); it is in flight now.
   */
  send(mutation: PendingMutation): MutationFrame {
    mutation.status = { state: "inFlight" };
    mutation.everSent = true;
    mutation.claimable = false;
    const { requestId, path, args, seq } = mutation;
    const ackedThrough = this.ackedThrough();
    return { type: "Mutation", requestId, path, args, clientId: this.clientId, seq, ...(ackedThrough > 0 ? { ackedThrough } : {}) };
  }

  /** Its outcome was unknown: re-send it later with the same seq (see `resendBackedOff`). */
  backOff(mutation: PendingMutation): void {
    mutation.status = { state: "backingOff" };
    mutation.resends++;
  }

  /** Mutations backing off go back to waiting; whether there were any. */
  resendBackedOff(): boolean {
    let any = false;
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state !== "backingOff") continue;
      mutation.status = { state: "waiting" };
      any = true;
    }
    return any;
  }

  /** Records a successful answer; the mutation resolves once the client's version covers `ts`. */
  commit(mutation: PendingMutation, ts: number, value: unknown): void {
    mutation.status = { state: "committed", ts, value };
    this.changes++;
  }

  /** Commits the waiting mutation with this seq (a ConnectAck knew its receipt); whether there was one. */
  commitKnown(seq: number, ts: number, value: unknown): boolean {
    for (const mutation of this.byRequestId.values()) {
      if (mutation.seq === seq && mutation.status.state !== "committed") {
        this.commit(mutation, ts, value);
        return true;
      }
    }
    return false;
  }

  /** Removes a mutation (it failed or will be rejected). */
  remove(mutation: PendingMutation): void {
    if (this.byRequestId.delete(mutation.requestId)) this.changes++;
  }

  /** Removes and returns the committed mutations whose commit ts is at most `ts`. */
  takeCovered(ts: number): PendingMutation[] {
    const covered: PendingMutation[] = [];
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state === "committed" && mutation.status.ts <= ts) covered.push(mutation);
    }
    for (const mutation of covered) this.byRequestId.delete(mutation.requestId);
    if (covered.length > 0) this.changes++;
    return covered;
  }

  /** Mutations in flight (or backing off) go back to waiting, to be re-sent on the next connection. */
  connectionLost(): void {
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state === "inFlight" || mutation.status.state === "backingOff") mutation.status = { state: "waiting" };
    }
  }

  /** Seqs sent on some connection and not answered (the first MUTATION_BATCH_ENTRIES_MAX; later ones are re-sent and deduplicated). */
  held(): number[] {
    const seqs: number[] = [];
    for (const mutation of this.byRequestId.values()) {
      if (seqs.length === MUTATION_BATCH_ENTRIES_MAX) break;
      if (mutation.everSent && mutation.status.state !== "committed") seqs.push(mutation.seq);
    }
    return seqs;
  }

  /** The highest seq such that every seq at or below it is answered. */
  ackedThrough(): number {
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state !== "committed") return mutation.seq - 1;
    }
    return this.nextSeq - 1;
  }

  /** Removes and returns every mutation (the client is closing). */
  takeAll(): PendingMutation[] {
    const all = [...this.byRequestId.values()];
    this.byRequestId.clear();
    this.changes++;
    return all;
  }
}

/**
 * Whether `mutation` may go out while the app's auth is `identity`: a claimable one as
 * any identity (it takes it), a restored one only as its own. One made in this session
 * under a token the client cannot read (unknown) may go under such a token, as it always
 * did: the client cannot tell two of them apart (after a reload it is held).
 */
function mayGoAs(mutation: PendingMutation, identity: AuthIdentity): boolean {
  if (mutation.claimable) return true;
  if (!mutation.restored && mutation.issuedAs.kind === "unknown") return identity.kind === "unknown";
  return sameIdentity(mutation.issuedAs, identity);
}

/**
 * Whether a mutation not claimable may go in a session running as `session` (null: a
 * SetAuth not answered yet). One of an unknown identity made in this session goes unless
 * the session is known to run as anonymous or a user.
 */
function mayGoIn(mutation: PendingMutation, session: AuthIdentity | null): boolean {
  if (!mutation.restored && mutation.issuedAs.kind === "unknown") return session === null || session.kind === "unknown";
  return session !== null && sameIdentity(mutation.issuedAs, session);
}

/** The callback that resolves a committed mutation with its decoded result (or rejects if it does not decode). */
export function resolution(mutation: PendingMutation): () => void {
  const { status } = mutation;
  return () => {
    if (status.state === "committed") settleDecoded(status.value, mutation.resolve, mutation.reject);
  };
}
