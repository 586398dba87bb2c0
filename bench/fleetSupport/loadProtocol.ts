import type { LatencySummary } from "../kit/LatencySummary.js";

/**
 * The JSON lines between bench:fleet and its load generator (loadProcess.ts): the
 * generator gets its configuration as its one argument, connects its clients, says
 * `ready`, then answers each command with one reply, in order.
 */
export interface LoadConfig {
  /** The fleet's nodes; client i connects to node i mod N. */
  readonly nodes: readonly { readonly nodeId: string; readonly url: string }[];
  /** Per shard, the node that writes it (the converged assignment). */
  readonly owners: readonly string[];
  readonly numShards: number;
  readonly clients: number;
  /** Channels the clients post to, uniformly at random. */
  readonly channels: number;
  /** The JSON size of a message body, roughly. */
  readonly bodyBytes: number;
  /** Mutations started per second over all clients (each client still has at most one in flight); 0: as fast as answers come. */
  readonly rate: number;
  /**
   * "spread": every client posts to any channel (its node forwards what it does not write);
   * "owner": each client posts only to channels of the shards its node writes, as a client
   * that routes by shard would (nothing is forwarded; the shards still get equal load).
   */
  readonly routing: "spread" | "owner";
  /** Run the cross-node commit → Transition probe during windows (needs 2 nodes or more). */
  readonly probes: boolean;
  readonly seed: number;
}

export type LoadCommand =
  | { readonly command: "window-start" }
  | { readonly command: "window-end" }
  /** From now on, record each shard's acknowledgements' wall-clock times (the kill comes next). */
  | { readonly command: "arm-kill" }
  /** `nodeId` was SIGKILLed at `atWallMs`: answer once each of `shards` acknowledged a write after it. */
  | { readonly command: "killed"; readonly nodeId: string; readonly atWallMs: number; readonly shards: readonly number[]; readonly waitMsMax: number }
  | { readonly command: "stop" };

/** What one window measured, from the clients' side. */
export interface LoadWindow {
  readonly wallMs: number;
  /** Mutations acknowledged (success) during the window. */
  readonly mutations: number;
  /** Mutations acknowledged since the generator started (the deployment's documents, less the probes'). */
  readonly mutationsSinceStart: number;
  /** Those whose shard the client's own node writes, and those it forwarded. */
  readonly owned: LatencySummary;
  readonly forwarded: LatencySummary;
  /** Per node: mutations its clients had acknowledged. */
  readonly perNode: Readonly<Record<string, number>>;
  /** Failed answers by error code (each was re-sent with the same receipt key). */
  readonly failures: Readonly<Record<string, number>>;
  /** Cross-node probes: send on node Y → the Transition on node X ≠ Y (null without probes). */
  readonly crossNode: CrossNodeFigures | null;
}

export interface CrossNodeFigures {
  /** Every probe. */
  readonly all: LatencySummary;
  /** By who writes the probe's shard: the sender's node, the subscriber's node, a third node. */
  readonly ownerIsSender: LatencySummary;
  readonly ownerIsSubscriber: LatencySummary;
  readonly ownerIsThird: LatencySummary;
  /** The probes' own send → MutationResponse on the sender's node. */
  readonly commit: LatencySummary;
}

export interface KillFigures {
  /** Per shard of the killed node: ms from the SIGKILL to the first acknowledged write on it (null: none within the wait). */
  readonly firstAckMs: Readonly<Record<string, number | null>>;
  /** Clients that were connected to the killed node (their sockets closed; they stopped). */
  readonly clientsLost: number;
  readonly failures: Readonly<Record<string, number>>;
}

export type LoadReply =
  | { readonly type: "ready"; readonly clients: number }
  | { readonly type: "ok" }
  | { readonly type: "window"; readonly window: LoadWindow }
  | { readonly type: "kill"; readonly kill: KillFigures }
  | { readonly type: "error"; readonly error: string };
