import type { Clock, Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { NodeRegistry, type NodeRole } from "./NodeRegistry.js";
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
  /** Registry renewal cadence; an entry lives three times as long. */
  readonly intervalMs?: number;
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
  private readers = false;

  constructor(private readonly options: PeerDiscoveryOptions) {
    this.registry = new NodeRegistry(options.store, options.deploymentId, options.nodeId, options.random);
    this.intervalMs = options.intervalMs ?? REGISTRY_INTERVAL_MS_DEFAULT;
  }

  /** Whether other nodes read this node's shards' common frontier (so idle shards tick for them). */
  get frontierReaders(): boolean {
    return this.readers;
  }

  /** Registers once (awaited), announces this node to the writers named in `writerUrls`, then renews on the beat. */
  async start(writerUrls: readonly string[]): Promise<void> {
    await this.refresh();
    void this.announceTo(writerUrls);
    this.loop ??= this.run();
  }

  /** Lists the live nodes now rather than at the next beat (this node just became a writer). */
  listNow(): void {
    if (this.loop !== null && !this.stopping.signal.aborted) void this.refresh();
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
    await this.loop;
    this.options.hints?.close();
    await this.registry.remove().catch(() => undefined);
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        await this.options.clock.sleep(this.intervalMs, this.stopping.signal);
      } catch {
        return;
      }
      await this.refresh();
    }
  }

  private async refresh(): Promise<void> {
    const { clock } = this.options;
    try {
      await this.registry.register({ url: this.options.url(), role: this.options.role() }, clock.nowMs(), this.intervalMs * 3);
      if (this.options.listsFollowers && this.options.writesAny()) {
        const peers = await this.registry.live(clock.nowMs());
        this.readers = peers.length > 0;
        this.options.hints?.setTargets(peers.filter((peer) => peer.url !== null).map((peer) => ({ nodeId: peer.nodeId, url: peer.url! })));
      }
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
