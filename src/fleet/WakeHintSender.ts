import { HINT_PENDING_BYTES_MAX, HINT_PENDING_PER_SHARD_MAX, HINT_TARGETS_MAX } from "../base/index.js";
import type { WakeHint } from "../replica/index.js";
import type { PeerClient } from "./PeerClient.js";
import { HINTS_PER_MESSAGE_MAX } from "./peerMessages.js";
/**
 * A writer's best-effort wake hints (DESIGN.md §9): after each commit, `{shard, seqno,
 * hash}` goes to every replica the registry names, so that it GETs the new segment at
 * once instead of at its next poll. The hash is of a segment the writer verified durable:
 * a replica whose GET returns exactly those bytes applies them without reading the
 * manifest (CatchUpOptions `vouching`). A first hint `{shard, seqno, verifying}` goes
 * out when the create landed, so that the replica's GET runs beside the writer's
 * verification instead of after it. A verified segment's hint may carry its bytes
 * (`segment`): the replica then applies it without any GET.
 *
 * Invariants:
 * - `hint` never waits and never throws: commits are never delayed by replicas.
 * - At most one hint request per target is on the wire; hints made meanwhile wait, in
 *   seqno order per shard, and all go in the next request when that one ends. So a slow
 *   or dead replica costs one pending request, however fast the writer commits, and at
 *   most HINT_PENDING_PER_SHARD_MAX hints per shard and HINT_PENDING_BYTES_MAX of
 *   segment bytes wait for it (past them the oldest hints go, or lose their bytes: the
 *   replica reads those segments). A "verifying" hint is replaced by its verified one.
 * - At most `concurrencyMax` hint requests are in flight in all; a hint over that bound
 *   is dropped (the replica's poll picks the segment up).
 * - Failures are counted, never retried: polling is the correctness backstop.
 * - At most HINT_TARGETS_MAX targets are kept (the registry's and announced ones alike),
 *   so announcements cannot grow the writer's state without bound.
 */
export interface WakeHintTarget {
  readonly nodeId: string;
  /** The node's base URL (ending in "/"). */
  readonly url: string;
}

export interface WakeHintSenderOptions {
  /** How hints travel (with the admin key: followers only take hints from their deployment). */
  readonly peers: PeerClient;
  readonly concurrencyMax?: number;
  readonly timeoutMs?: number;
}

export interface WakeHintStats {
  readonly sent: number;
  readonly failed: number;
  readonly dropped: number;
}

interface TargetState {
  readonly target: WakeHintTarget;
  inFlight: boolean;
  /** Hints not yet sent, per shard in seqno order. */
  readonly pending: Map<number, WakeHint[]>;
  /** Segment bytes the pending hints carry. */
  pendingBytes: number;
}

export class WakeHintSender {
  private targets = new Map<string, TargetState>();
  private inFlight = 0;
  private sent = 0;
  private failed = 0;
  private dropped = 0;
  private readonly concurrencyMax: number;
  private readonly timeoutMs: number;
  private closed = false;
  private rotation = 0;

  constructor(private readonly options: WakeHintSenderOptions) {
    this.concurrencyMax = options.concurrencyMax ?? 16;
    this.timeoutMs = options.timeoutMs ?? 2_000;
  }

  /** Replaces the set of replicas to hint (from the node registry). */
  setTargets(targets: readonly WakeHintTarget[]): void {
    const next = new Map<string, TargetState>();
    for (const target of targets.slice(0, HINT_TARGETS_MAX)) {
      const existing = this.targets.get(target.nodeId);
      next.set(target.nodeId, existing !== undefined && existing.target.url === target.url ? existing : { target, inFlight: false, pending: new Map(), pendingBytes: 0 });
    }
    this.targets = next;
  }

  /**
   * Adds (or updates) one replica to hint, keeping the others (a replica that announced
   * itself); false when HINT_TARGETS_MAX others are kept already (it is hinted once the
   * registry's listing names it, and polls meanwhile).
   */
  addTarget(target: WakeHintTarget): boolean {
    const existing = this.targets.get(target.nodeId);
    if (existing !== undefined && existing.target.url === target.url) return true;
    if (existing === undefined && this.targets.size >= HINT_TARGETS_MAX) return false;
    this.targets.set(target.nodeId, { target, inFlight: false, pending: new Map(), pendingBytes: 0 });
    return true;
  }

  get targetCount(): number {
    return this.targets.size;
  }

  /** The log of `hint.shard` grew to `hint.seqno`: tell every replica, without waiting. */
  hint(hint: WakeHint): void {
    if (this.closed) return;
    // Start at a rotating target: over the in-flight bound, the same replicas must not be
    // the ones dropped every time.
    const states = [...this.targets.values()];
    const first = states.length === 0 ? 0 : this.rotation++ % states.length;
    for (let at = 0; at < states.length; at++) {
      const state = states[(first + at) % states.length]!;
      queueHint(state, hint);
      this.pump(state);
    }
  }

  stats(): WakeHintStats {
    return { sent: this.sent, failed: this.failed, dropped: this.dropped };
  }

  close(): void {
    this.closed = true;
    this.targets.clear();
  }

  private pump(state: TargetState): void {
    if (state.inFlight || state.pending.size === 0 || this.closed) return;
    const waiting = [...state.pending.values()].flat();
    state.pending.clear();
    state.pendingBytes = 0;
    // What one message cannot carry waits for the next (per shard, the newer hints).
    const hints = waiting.slice(0, HINTS_PER_MESSAGE_MAX);
    for (const later of waiting.slice(HINTS_PER_MESSAGE_MAX)) queueHint(state, later);
    if (this.inFlight >= this.concurrencyMax) {
      this.dropped += hints.length;
      return;
    }
    state.inFlight = true;
    this.inFlight++;
    void this.send(state.target, hints).finally(() => {
      state.inFlight = false;
      this.inFlight--;
      if (this.targets.get(state.target.nodeId) === state) this.pump(state);
    });
  }

  private async send(target: WakeHintTarget, hints: readonly WakeHint[]): Promise<void> {
    if (await this.options.peers.sendHints(target.url, { hints }, this.timeoutMs)) this.sent += hints.length;
    else this.failed += hints.length;
  }
}

/**
 * Adds `hint` to what waits for one target, per shard in seqno order: every verified hint
 * (its hash vouches for its segment, its bytes spare a GET), but of the hints without a
 * hash (a plain wake, a "verifying" one) only the newest, since a later hint says as much
 * (a verified hint replaces the "verifying" one at its seqno). Within the bounds: the
 * oldest hints of the shard go first; past the byte bound the oldest lose their bytes.
 */
function queueHint(state: TargetState, hint: WakeHint): void {
  let queue = state.pending.get(hint.shard);
  if (queue === undefined) state.pending.set(hint.shard, (queue = []));
  const last = queue[queue.length - 1];
  if (last !== undefined && (last.seqno > hint.seqno || (last.seqno === hint.seqno && hint.hash === undefined))) return; // the last one says more
  while (queue.length > 0 && queue[queue.length - 1]!.hash === undefined) queue.pop(); // carried no bytes
  if (last !== undefined && last.seqno === hint.seqno && last.hash !== undefined) {
    queue.pop(); // the same segment vouched again
    state.pendingBytes -= last.segment?.byteLength ?? 0;
  }
  queue.push(hint);
  state.pendingBytes += hint.segment?.byteLength ?? 0;
  while (queue.length > HINT_PENDING_PER_SHARD_MAX) state.pendingBytes -= queue.shift()!.segment?.byteLength ?? 0;
  if (state.pendingBytes <= HINT_PENDING_BYTES_MAX) return;
  for (const waiting of state.pending.values()) {
    for (let index = 0; index < waiting.length && state.pendingBytes > HINT_PENDING_BYTES_MAX; index++) {
      const { segment, ...withoutBytes } = waiting[index]!;
      if (segment === undefined) continue;
      waiting[index] = withoutBytes;
      state.pendingBytes -= segment.byteLength;
    }
  }
}
