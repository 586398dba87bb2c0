import { MUTATION_BATCH_ENTRIES_MAX } from "../base/index.js";
import type { Value } from "../model/Value.js";
import type { JsonValue } from "../model/ValueJson.js";
import type { ClientMessage } from "../sync/protocol.js";
import { settleDecoded } from "./settleDecoded.js";

/**
 * The client's mutations that have not settled. Each has a requestId (per client) and a
 * seq (per clientId, from 1); (clientId, seq) is its receipt key on the server, so a
 * re-send after a reconnect is answered from the receipt and never applied twice.
 *
 * A mutation's lifecycle:
 *
 *   status     event                                  next
 *   waiting    sent (after ConnectAck, within the in-flight bound)  inFlight
 *   inFlight   connection lost                        waiting (re-sent with the same seq)
 *   inFlight   MutationResponse success / replayed    committed(ts)
 *   waiting    seq known in ConnectAck                committed(ts)
 *   inFlight   MutationResponse failure, ProtocolError  (rejected, removed)
 *   inFlight   failure with an unknown outcome        backingOff (resends < MUTATION_RESENDS_MAX)
 *   backingOff its backoff elapsed, or a reconnect    waiting (re-sent with the same seq)
 *   committed  the client's version.ts ≥ ts           (resolved, removed)
 *
 * Invariant: the map holds mutations in seq order (insertion order), so the first one
 * not answered bounds `ackedThrough`.
 */

export type MutationStatus =
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
  status: MutationStatus;
  /** Whether it went out on some connection: only those are held (the server may know them). */
  everSent: boolean;
  /** Times it was re-sent after an unknown outcome. */
  resends: number;
  readonly resolve: (value: Value) => void;
  readonly reject: (error: unknown) => void;
}

type MutationFrame = Extract<ClientMessage, { type: "Mutation" }>;

export class PendingMutations {
  private readonly byRequestId = new Map<number, PendingMutation>();
  private nextSeq = 1;

  constructor(private readonly clientId: string) {}

  create(requestId: number, path: string, args: JsonValue): Promise<Value> {
    return new Promise<Value>((resolve, reject) => {
      const seq = this.nextSeq++;
      this.byRequestId.set(requestId, { requestId, seq, path, args, status: { state: "waiting" }, everSent: false, resends: 0, resolve, reject });
    });
  }

  get(requestId: number): PendingMutation | undefined {
    return this.byRequestId.get(requestId);
  }

  /** The mutations waiting to be sent, in seq order. */
  waiting(): PendingMutation[] {
    return [...this.byRequestId.values()].filter((mutation) => mutation.status.state === "waiting");
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
    this.byRequestId.delete(mutation.requestId);
  }

  /** Removes and returns the committed mutations whose commit ts is at most `ts`. */
  takeCovered(ts: number): PendingMutation[] {
    const covered: PendingMutation[] = [];
    for (const mutation of this.byRequestId.values()) {
      if (mutation.status.state === "committed" && mutation.status.ts <= ts) covered.push(mutation);
    }
    for (const mutation of covered) this.byRequestId.delete(mutation.requestId);
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
    return all;
  }
}

/** The callback that resolves a committed mutation with its decoded result (or rejects if it does not decode). */
export function resolution(mutation: PendingMutation): () => void {
  const { status } = mutation;
  return () => {
    if (status.state === "committed") settleDecoded(status.value, mutation.resolve, mutation.reject);
  };
}
