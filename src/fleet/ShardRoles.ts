import { type Clock, ConditionWaiters, CairnError } from "../base/index.js";
import type { EngineEvent, ShardEngine } from "../shard/index.js";

/**
 * What this node is for one shard (DESIGN.md §9):
 * - `following`: another node writes it (or nobody does); this node tails its log.
 * - `acquiring`: this node is taking the lease (epoch bump, catch-up, fence segment).
 * - `writing`: this node holds the lease and commits.
 * - `handingOver`: this node stopped accepting, drains what it queued, and clears the lease.
 * - `fenced`: this node wrote it until a newer epoch, an unknown commit outcome or a lost
 *   lease stopped it (engine "fenced" or "poisoned"); it writes nothing more under that
 *   epoch, tails the log, and follows once it sees who writes now — or acquires again.
 * - `closed`: the node stopped.
 */
export type ShardRole = "following" | "acquiring" | "writing" | "handingOver" | "fenced" | "closed";

/**
 * Every transition a shard's role may take; anything else is a bug and throws. Acquire
 * and hand-over are the only ways into and out of writing that this node chooses; fenced
 * is the one the bucket chooses for it.
 */
export const ROLE_TRANSITIONS: { readonly [from in ShardRole]: readonly ShardRole[] } = {
  following: ["acquiring", "closed"],
  // The lease is ours (writing), someone else's (following), or the try broke off mid-way.
  acquiring: ["writing", "following", "fenced", "closed"],
  writing: ["handingOver", "fenced", "closed"],
  // Drained and cleared (following), or a newer epoch found while draining (fenced).
  handingOver: ["following", "fenced", "closed"],
  // The successor is known (following), or this node takes the shard back (acquiring).
  fenced: ["following", "acquiring", "closed"],
  closed: [],
};

export interface RoleChange {
  readonly shard: number;
  readonly from: ShardRole;
  readonly to: ShardRole;
  /** Why, for logs and health: "acquired epoch 4", "fenced: …". */
  readonly reason: string;
}

export interface ShardRolesOptions {
  readonly engines: readonly ShardEngine[];
  readonly nodeId: string;
  readonly clock: Clock;
}

/**
 * The role machine of one node: a role per shard, moved only along ROLE_TRANSITIONS, and
 * the only part that starts an acquire or a hand-over. The policies that want one — the
 * writer's start-up, a standby's lease watch, the fleet's balancer — ask it; the parts
 * that depend on roles — write routing, forwarding, hints, tailers, health — listen to
 * `onChange` and never decide. The engine keeps its own state (what it may do); a role
 * adds what this node is doing about it (acquiring, handing over) and what the bucket
 * decided (fenced).
 *
 * Invariants:
 * - A shard is `writing` exactly while its engine is; listeners hear every change once,
 *   in order, after the role moved.
 * - At most one acquire or hand-over runs per shard at a time: a second request for the
 *   same one joins the first; an acquire while handing over (or the reverse) is refused.
 * - A failed acquire returns the shard to where it was (following or fenced).
 */
export class ShardRoles {
  private readonly current: ShardRole[];
  private readonly listeners = new Set<(change: RoleChange) => void>();
  private readonly running = new Map<number, { readonly kind: "acquire" | "handOver"; readonly done: Promise<void> }>();
  /** Per shard: callers waiting for this node to write it. */
  private readonly writingWaiters: readonly ConditionWaiters[];

  constructor(private readonly options: ShardRolesOptions) {
    this.current = options.engines.map((engine) => (engine.state.kind === "writing" ? "writing" : engine.state.kind === "closed" ? "closed" : "following"));
    this.writingWaiters = options.engines.map(() => new ConditionWaiters(options.clock));
  }

  role(shard: number): ShardRole {
    const role = this.current[shard];
    if (role === undefined) throw new CairnError("INVALID_ARGUMENT", `no shard ${shard}: the deployment has shards 0..${this.current.length - 1}`);
    return role;
  }

  roles(): readonly ShardRole[] {
    return [...this.current];
  }

  writesEvery(): boolean {
    return this.current.every((role) => role === "writing");
  }

  writesAny(): boolean {
    return this.current.some((role) => role === "writing");
  }

  /** Whether this node is about to write `shard` (an acquire of its own in progress). */
  acquiring(shard: number): boolean {
    return this.current[shard] === "acquiring";
  }

  onChange(listener: (change: RoleChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves true once this node writes `shard`; false after `timeoutMs`, or when an acquire of it ends otherwise. */
  waitUntilWriting(shard: number, timeoutMs: number): Promise<boolean> {
    const waiters = this.writingWaiters[shard];
    if (waiters === undefined) return Promise.resolve(false);
    return waiters.wait(() => this.current[shard] === "writing", timeoutMs);
  }

  /**
   * Takes the lease of `shard` (the engine bumps the epoch, catches up and fences the log).
   * Rejects as the engine does (LEASE_HELD: another node's lease is live) and leaves the
   * role where it was.
   */
  acquire(shard: number): Promise<void> {
    return this.run(shard, "acquire", async () => {
      const engine = this.engine(shard);
      const from = this.role(shard);
      if (from === "writing") return;
      if (from !== "following" && from !== "fenced") throw new CairnError("ENGINE_CLOSED", `shard ${shard} is ${from}: it cannot be acquired now`);
      this.move(shard, "acquiring", "acquiring the lease");
      try {
        await engine.acquire();
      } finally {
        // The engine's "acquired" event moved the role on success; anything else ends the try.
        if (this.current[shard] === "acquiring") {
          const state = engine.state.kind;
          this.move(shard, state === "writing" ? "writing" : state === "closed" ? "closed" : from, state === "writing" ? `acquired epoch ${engine.manifestCurrent.epoch}` : "the acquire did not complete");
        }
      }
    });
  }

  /** Stops writing `shard` gracefully: drain, then clear the lease so a successor takes over at once. */
  handOver(shard: number): Promise<void> {
    return this.run(shard, "handOver", async () => {
      const engine = this.engine(shard);
      if (this.role(shard) !== "writing") return;
      this.move(shard, "handingOver", "handing the shard over");
      try {
        await engine.relinquish();
      } finally {
        if (this.current[shard] === "handingOver") this.move(shard, engine.state.kind === "closed" ? "closed" : "following", "handed over");
      }
    });
  }

  /** The node stops: every shard is closed (the engines are closed by their owner). */
  closeAll(): void {
    for (let shard = 0; shard < this.current.length; shard++) if (this.current[shard] !== "closed") this.move(shard, "closed", "the node stopped");
    for (const waiters of this.writingWaiters) waiters.settleAll();
  }

  /** Feeds the engines' events: what the bucket decided (fenced) and what an acquire ended in. */
  engineEvent(event: EngineEvent): void {
    const role = this.current[event.shard];
    if (role === undefined || role === "closed") return;
    switch (event.type) {
      case "acquired":
        // An acquire not asked of this machine (a direct engine call) still passes through acquiring.
        if (role === "following" || role === "fenced") this.move(event.shard, "acquiring", "acquiring the lease");
        this.move(event.shard, "writing", `acquired epoch ${event.epoch}`);
        return;
      case "fenced":
      case "poisoned":
        if (role === "writing" || role === "handingOver" || role === "acquiring") this.move(event.shard, "fenced", `${event.type} (${event.error.message})`);
        // The read that fenced it usually named the new writer already (its writer-changed came first).
        this.followIfWrittenElsewhere(event.shard);
        return;
      case "relinquished":
        if (role === "writing") this.move(event.shard, "handingOver", "handing the shard over");
        if (this.current[event.shard] === "handingOver" && !this.running.has(event.shard)) this.move(event.shard, "following", "handed over");
        return;
      case "writer-changed":
        this.followIfWrittenElsewhere(event.shard);
        return;
      default:
        return;
    }
  }

  /** A demoted writer follows once it knows who writes the shard now. */
  private followIfWrittenElsewhere(shard: number): void {
    if (this.current[shard] !== "fenced") return;
    const manifest = this.engine(shard).manifestCurrent;
    const writer = manifest.writer;
    if (writer !== null && writer.nodeId !== this.options.nodeId) this.move(shard, "following", `shard written by ${writer.nodeId} (epoch ${manifest.epoch})`);
  }

  private engine(shard: number): ShardEngine {
    const engine = this.options.engines[shard];
    if (engine === undefined) throw new CairnError("INVALID_ARGUMENT", `no shard ${shard}: the deployment has shards 0..${this.current.length - 1}`);
    return engine;
  }

  private run(shard: number, kind: "acquire" | "handOver", job: () => Promise<void>): Promise<void> {
    const running = this.running.get(shard);
    if (running !== undefined) {
      if (running.kind === kind) return running.done;
      return Promise.reject(new CairnError("ENGINE_CLOSED", `shard ${shard}: cannot ${kind === "acquire" ? "acquire" : "hand over"} while ${running.kind === "acquire" ? "acquiring" : "handing over"}`));
    }
    const done = job().finally(() => {
      this.running.delete(shard);
      this.writingWaiters[shard]!.settleAll();
    });
    this.running.set(shard, { kind, done });
    return done;
  }

  private move(shard: number, to: ShardRole, reason: string): void {
    const from = this.current[shard]!;
    if (from === to) return;
    if (!ROLE_TRANSITIONS[from].includes(to)) throw new CairnError("INTERNAL", `shard ${shard}: no role transition from ${from} to ${to} (${reason})`);
    this.current[shard] = to;
    this.writingWaiters[shard]!.notify();
    for (const listener of this.listeners) listener({ shard, from, to, reason });
  }
}
