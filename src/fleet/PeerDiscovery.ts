import { type Clock, CairnError, hasErrorCode, type Random, repeatEvery, type Timer } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { NodeRegistry, type NodeEntry, type NodeRole } from "./NodeRegistry.js";
import type { PeerChecks } from "./PeerChecks.js";
import type { PeerClient } from "./PeerClient.js";
import type { Announcement } from "./peerMessages.js";
import type { WakeHintSender } from "./WakeHintSender.js";

/**
 * Registry renewal: a PUT every 30 s is 120 an hour per node (~$0.44 a month at S3
 * Standard), and a writer learns of a new follower (starts hinting it) within 30 s.
 */
export const REGISTRY_INTERVAL_MS_DEFAULT = 30_000;

export interface PeerDiscoveryOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly nodeId: string;
  readonly clock: Clock;
  readonly random: Random;
  /** Registry renewal cadence (the fleet's beat). */
  readonly intervalMs?: number;
  /** How long an entry lives after a renewal (default three intervals). */
  readonly ttlMs?: number;
  /** The shards this node writes, named in its entry. */
  readonly writes?: () => readonly number[];
  /** A fleet node: its entry is exclusive to it, it lists the live nodes on every beat and hands them to `onBeat`. */
  readonly fleet?: FleetPresence;
  /** Where this node answers (null until it listens, or when it cannot be reached). */
  readonly url: () => string | null;
  readonly role: () => NodeRole;
  /** Whether this node writes any shard now: only then are followers listed (hints, frontier ticks). */
  readonly writesAny: () => boolean;
  /** Whether this node needs to know its followers: it hints them, or it has shards to tick for them. */
  readonly listsFollowers: boolean;
  /** Node-to-node requests (null: no admin key, so no announcements). */
  readonly peers: PeerClient | null;
  /** The followers to wake after commits (null: hints off). */
  readonly hints: WakeHintSender | null;
  readonly onError: (error: unknown) => void;
}

export interface FleetPresence {
  /** The clock skew between nodes: an entry counts as live until this long after its expiry. */
  readonly graceMs: number;
  /** Says what the start waits for (a leftover entry under this node's id). */
  readonly log: (line: string) => void;
  /** Warns of peers with a skewed clock or an unreachable URL. */
  readonly checks?: PeerChecks;
  /** After each beat's listing: the other live nodes, and whether this node's own entry is live. */
  readonly onBeat: (beat: FleetBeat) => Promise<void> | void;
}

export interface FleetBeat {
  readonly others: readonly NodeEntry[];
  /** This node renewed its entry within its TTL (a node cut off from the bucket is not live, even to itself). */
  readonly selfLive: boolean;
}

/**
 * How the nodes of a deployment find each other (DESIGN.md §9), with nothing but the
 * bucket and best-effort messages: each node keeps its entry under `nodes/{nodeId}` fresh
 * (NodeRegistry); a writer lists the live entries on the same beat to learn whom to hint
 * and whether anyone reads its shards' common frontier; and a follower announces itself
 * to the writers it follows — at start and whenever a shard gets a new writer — so they
 * start at once rather than at their next listing.
 *
 * Invariants:
 * - Nothing depends on discovery for correctness: a lost announcement or a stale listing
 *   costs latency (a hint not sent, a tick not written), never data.
 * - The registry is LISTed only on the beat, and only by a node that writes a shard.
 * - `frontierReaders` only goes from false to true between listings (an announcement), so
 *   a follower is never left waiting for ticks a listing has not yet asked for.
 */
export class PeerDiscovery {
  private readonly registry: NodeRegistry;
  private readonly intervalMs: number;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly ttlMs: number;
  private readers = false;
  /** The beat under way (listNow does not start a second). */
  private refreshing: Promise<void> | null = null;
  /** When this node's entry was last renewed (monotonic ms), or null. */
  private renewedAtMs: number | null = null;
  private lastOthers: readonly NodeEntry[] = [];
  private claimed = false;
  private extraBeat: { readonly atMs: number; readonly timer: Timer } | null = null;

  constructor(private readonly options: PeerDiscoveryOptions) {
    this.registry = new NodeRegistry(options.store, options.deploymentId, options.nodeId, options.random, options.fleet?.graceMs ?? null);
    this.intervalMs = options.intervalMs ?? REGISTRY_INTERVAL_MS_DEFAULT;
    this.ttlMs = options.ttlMs ?? this.intervalMs * 3;
  }

  /** The other live nodes as the last listing found them (empty before one). */
  get others(): readonly NodeEntry[] {
    return this.lastOthers;
  }

  /** Whether this node's entry is live: renewed within its TTL. */
  get selfLive(): boolean {
    return this.renewedAtMs !== null && this.options.clock.monotonicMs() - this.renewedAtMs < this.ttlMs;
  }

  /** Whether other nodes read this node's shards' common frontier (so idle shards tick for them). */
  get frontierReaders(): boolean {
    return this.readers;
  }

  /**
   * Registers once (awaited), announces this node to the writers named in `writerUrls`,
   * then renews on the beat. A fleet node whose id another process holds waits that entry
   * out once (a crashed run of its own leaves one behind); if it was renewed meanwhile,
   * NODE_ID_IN_USE.
   */
  async start(writerUrls: readonly string[]): Promise<void> {
    await this.claim();
    await this.refresh();
    void this.announceTo(writerUrls);
    this.loop ??= this.run();
  }

  /** An extra beat in `delayMs` (one pending at a time: a sooner request replaces a later one). */
  beatIn(delayMs: number): void {
    if (this.stopping.signal.aborted) return;
    const atMs = this.options.clock.monotonicMs() + delayMs;
    if (this.extraBeat !== null && this.extraBeat.atMs <= atMs) return;
    this.extraBeat?.timer.cancel();
    this.extraBeat = {
      atMs,
      timer: this.options.clock.setTimer(delayMs, () => {
        this.extraBeat = null;
        if (!this.stopping.signal.aborted) void this.refresh();
      }),
    };
  }

  /** Lists the live nodes now rather than at the next beat (this node just became a writer). */
  listNow(): void {
    if (this.loop !== null && !this.stopping.signal.aborted) void this.refresh();
  }

  /**
   * A fleet node's first registration, before it writes anything else to the bucket (its
   * tailers' watermarks live under its id too): NODE_ID_IN_USE if another process holds
   * the id, after waiting a leftover entry out once. Nothing for the other roles; once.
   */
  async claim(): Promise<void> {
    if (this.options.fleet === undefined || this.claimed) return;
    await this.registerWaitingOutLeftover(this.options.fleet);
    this.claimed = true;
  }

  private async registerWaitingOutLeftover({ graceMs, log }: FleetPresence): Promise<void> {
    const { clock } = this.options;
    let waitedFor: number | null = null;
    for (;;) {
      try {
        await this.register();
        return;
      } catch (error) {
        if (!hasErrorCode(error, "NODE_ID_IN_USE")) throw error;
        const expiresAt = Number((error as CairnError).details["expiresAt"]);
        if (waitedFor !== null && expiresAt > waitedFor) throw error;
        waitedFor = expiresAt;
        const waitMs = Math.max(0, expiresAt + graceMs - clock.nowMs()) + 1;
        log(`node id ${this.options.nodeId}: an entry from another process (or this node's previous run) is live for ${(waitMs / 1000).toFixed(1)} s more; waiting it out — if it is renewed meanwhile, another node uses this id`);
        await clock.sleep(waitMs, this.stopping.signal);
      }
    }
  }

  private async register(): Promise<void> {
    const startedAtMs = this.options.clock.monotonicMs();
    await this.registry.register({ url: this.options.url(), role: this.options.role(), ...(this.options.writes !== undefined ? { writes: this.options.writes() } : {}) }, this.options.clock.nowMs(), this.ttlMs);
    this.renewedAtMs = startedAtMs;
  }

  /** A node announced itself: it reads the frontier, and it is hinted from now on. */
  peerJoined(peer: Announcement): void {
    if (peer.nodeId === this.options.nodeId) return;
    this.readers = true;
    this.options.hints?.addTarget(peer);
  }

  /** A shard has a new writer elsewhere: tell it at once that this node follows it. */
  writerChanged(writer: { readonly nodeId: string; readonly url: string | null } | null): void {
    if (writer !== null && writer.nodeId !== this.options.nodeId && writer.url !== null) void this.announceTo([writer.url]);
  }

  /** Stops the beat and removes this node's entry: writers stop hinting it at once. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.extraBeat?.timer.cancel();
    await this.loop;
    await this.refreshing;
    this.options.hints?.close();
    await this.registry.remove().catch(() => undefined);
  }

  private run(): Promise<void> {
    return repeatEvery(this.options.clock, this.intervalMs, this.stopping.signal, () => this.refresh());
  }

  private refresh(): Promise<void> {
    return (this.refreshing ??= this.beat().finally(() => {
      this.refreshing = null;
    }));
  }

  /** One beat: renew the entry; list the live nodes when this node needs them; hand them to the fleet. */
  private async beat(): Promise<void> {
    const { clock, fleet } = this.options;
    try {
      await this.register();
    } catch (error) {
      this.options.onError(error);
    }
    try {
      if (fleet !== undefined || (this.options.listsFollowers && this.options.writesAny())) {
        const peers = await this.registry.live(clock.nowMs(), fleet?.graceMs ?? 0);
        this.lastOthers = peers;
        this.readers = peers.length > 0;
        this.options.hints?.setTargets(peers.filter((peer) => peer.url !== null).map((peer) => ({ nodeId: peer.nodeId, url: peer.url! })));
      }
      fleet?.checks?.check(this.lastOthers);
      if (fleet !== undefined && !this.stopping.signal.aborted) await fleet.onBeat({ others: this.lastOthers, selfLive: this.selfLive });
    } catch (error) {
      this.options.onError(error);
    }
  }

  private async announceTo(writerUrls: readonly string[]): Promise<void> {
    const url = this.options.url();
    const peers = this.options.peers;
    if (url === null || peers === null) return;
    await Promise.all([...new Set(writerUrls)].map((writerUrl) => peers.announce(writerUrl, { nodeId: this.options.nodeId, url })));
  }
}
