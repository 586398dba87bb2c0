import type { Value } from "../../src/model/Value.js";
import type { ClientMessage, QueryModification, ServerMessage, Version } from "../../src/sync/protocol.js";
import { ClientState } from "../../src/client/ClientState.js";
import type { Effects } from "../../src/client/Effects.js";
import { encodeArgs } from "../../src/client/encodeArgs.js";
import type { QueryListener, Subscription } from "../../src/client/QuerySet.js";

/**
 * Drives a ClientState with plain messages, as a driver would: each step takes the
 * state's effects, keeps the frames it sent and runs its callbacks.
 */
export class StateHarness {
  readonly state: ClientState;
  readonly errors: unknown[] = [];
  /** Every frame sent, in order, since the last `takeSent`. */
  private sent: ClientMessage[] = [];
  /** The last resync reason asked for (null: none since the last `takeResync`). */
  private resync: string | null = null;
  private sessions = 0;

  constructor(clientId = "client-1") {
    this.state = new ClientState({ clientId, reportError: (error) => this.errors.push(error) });
  }

  /** Runs an operation, then its effects. */
  step<T>(operation: (state: ClientState) => T): T {
    const result = operation(this.state);
    this.apply(this.state.takeEffects());
    return result;
  }

  receive(message: ServerMessage): void {
    this.step((state) => state.receive(message));
  }

  takeSent(): ClientMessage[] {
    const sent = this.sent;
    this.sent = [];
    return sent;
  }

  takeResync(): string | null {
    const reason = this.resync;
    this.resync = null;
    return reason;
  }

  /** Opens a connection and acknowledges it; returns the Connect frame. Frames sent before are discarded. */
  connect(ack: Partial<Extract<ServerMessage, { type: "ConnectAck" }>> = {}): Extract<ClientMessage, { type: "Connect" }> {
    this.takeSent();
    this.step((state) => state.connectionOpened(`session-${++this.sessions}`));
    const [connect] = this.takeSent();
    if (connect?.type !== "Connect") throw new Error(`expected Connect, got ${JSON.stringify(connect)}`);
    this.receive({ type: "ConnectAck", deploymentId: "d", sessionId: connect.sessionId, known: [], results: [], ts: 0, ...ack });
    return connect;
  }

  /** Connects and answers the first ModifyQuerySet with an empty Transition to `ts`. */
  connectAt(ts: number): void {
    this.connect();
    this.takeSent();
    this.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts }, []);
  }

  lose(): void {
    this.step((state) => state.connectionLost());
  }

  transition(startVersion: Version, endVersion: Version, modifications: QueryModification[]): void {
    this.receive({ type: "Transition", startVersion, endVersion, modifications });
  }

  subscribe(path: string, args: unknown, listener: QueryListener = recorder().listener): Subscription {
    return this.step((state) => state.subscribe(path, encodeArgs(args), listener));
  }

  mutate(path: string, args: unknown, optimistic?: Parameters<ClientState["mutate"]>[2]): Promise<Value> {
    return this.step((state) => state.mutate(path, encodeArgs(args), optimistic));
  }

  act(path: string, args: unknown): Promise<Value> {
    return this.step((state) => state.act(path, encodeArgs(args)));
  }

  private apply(effects: Effects): void {
    this.sent.push(...effects.send);
    for (const callback of effects.callbacks) callback();
    if (effects.resync !== null) this.resync = effects.resync;
    if (effects.resendAfterMs !== null) this.resendAfterMs = effects.resendAfterMs;
  }

  /** The last re-send delay asked for (null: none since the last `takeResendAfterMs`). */
  private resendAfterMs: number | null = null;

  takeResendAfterMs(): number | null {
    const delayMs = this.resendAfterMs;
    this.resendAfterMs = null;
    return delayMs;
  }
}

/** A query listener that records what it was told. */
export function recorder(): { listener: QueryListener; updates: Value[]; errors: unknown[] } {
  const updates: Value[] = [];
  const errors: unknown[] = [];
  return { listener: { onUpdate: (value) => updates.push(value), onError: (error) => errors.push(error) }, updates, errors };
}

export type Outcome = { readonly state: "pending" } | { readonly state: "resolved"; readonly value: unknown } | { readonly state: "rejected"; readonly error: unknown };

/** A promise's outcome so far (after letting already-settled promises run their handlers). */
export async function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  let outcome: Outcome = { state: "pending" };
  promise.then(
    (value) => (outcome = { state: "resolved", value }),
    (error: unknown) => (outcome = { state: "rejected", error }),
  );
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
  return outcome;
}

export function frameOfType<T extends ClientMessage["type"]>(frames: readonly ClientMessage[], type: T): Extract<ClientMessage, { type: T }>[] {
  return frames.filter((frame): frame is Extract<ClientMessage, { type: T }> => frame.type === type);
}
