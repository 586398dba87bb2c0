import { z } from "zod";
import { CairnError, hasErrorCode, isCasConflict, type Random, randomHex } from "../base/index.js";
import { NODE_ID_PATTERN } from "../model/index.js";
import { bucketLayout, CasObject, jsonCasCodec, type CasSnapshot } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * The nodes of a deployment, each registered under `nodes/{nodeId}` (DESIGN.md §9): where
 * it serves, what it is, and until when the entry holds. Writers read it to send wake
 * hints; operators read it to see the fleet. Nothing depends on it for correctness: an
 * entry that is stale, missing or forged costs at most a useless or a lost hint.
 *
 * Invariants:
 * - `register` writes only a well-formed entry of this node (INVALID_ARGUMENT otherwise).
 * - `live` returns entries of this deployment whose expiry has not passed, other than
 *   this node's; an entry that cannot be parsed is skipped, never fatal.
 */
const nodeEntrySchema = z.object({
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  deploymentId: z.string().min(1),
  nodeId: z.string().min(1),
  /** Where the node's HTTP API answers (wake hints, forwarded writes), or null. */
  url: z.string().url().nullable(),
  role: z.enum(["writer", "replica", "standby", "fleet"]),
  /**
   * A random id of the process that wrote the entry: another process registering under
   * the same node id (a misconfiguration) is told apart from this one's earlier renewals.
   * Absent in entries written before it existed.
   */
  incarnation: z.string().min(1).max(64).optional(),
  /** The shards this node writes, as it last registered (for operators; ownership is the manifests'). */
  writes: z.array(z.number().int().min(0)).max(65_536).optional(),
  /** Milliseconds since the Unix epoch. */
  expiresAt: z.number().int().min(0),
  updatedAt: z.number().int().min(0),
});

export type NodeEntry = z.infer<typeof nodeEntrySchema>;
export type NodeRole = NodeEntry["role"];

const nodeEntryCodec = jsonCasCodec(nodeEntrySchema, "NODE_ENTRY_INVALID", "node entry");

/** How long an expired entry stays for operators to see before a scan deletes it. */
const EXPIRED_ENTRY_KEPT_MS = 60 * 60 * 1000;

/** Entries to read at most per scan: a bucket flooded with entries must not stall the writer. */
const NODES_SCANNED_MAX = 256;

export class NodeRegistry {
  private readonly object: CasObject<NodeEntry>;
  /** The entry as this node last wrote it: a renewal CASes against it without a GET first. */
  private written: CasSnapshot<NodeEntry> | null = null;

  /** This process's id in the entry (see the schema's `incarnation`). */
  private readonly incarnation: string;

  /**
   * `exclusiveGraceMs`: when set (fleet nodes), another process's entry under this node id
   * makes `register` refuse with NODE_ID_IN_USE until that long past its expiry (the clock
   * skew between nodes) instead of taking the id over. Null (the other roles, whose
   * entries only route hints): a restarted node takes its old entry over at once.
   */
  constructor(
    private readonly store: ObjectStore,
    private readonly deploymentId: string,
    readonly nodeId: string,
    private readonly random: Random,
    private readonly exclusiveGraceMs: number | null = null,
  ) {
    if (!NODE_ID_PATTERN.test(nodeId)) throw new CairnError("INVALID_ARGUMENT", `a registered node id must match ${NODE_ID_PATTERN}, got ${JSON.stringify(nodeId)}`);
    this.incarnation = randomHex(random, 8);
    this.object = new CasObject(store, bucketLayout.node(nodeId), nodeEntryCodec, random);
  }

  /** Writes (or renews) this node's entry, valid until `nowMs + ttlMs`. */
  async register(entry: { readonly url: string | null; readonly role: NodeRole; readonly writes?: readonly number[] }, nowMs: number, ttlMs: number): Promise<void> {
    const fields = {
      deploymentId: this.deploymentId,
      nodeId: this.nodeId,
      url: entry.url,
      role: entry.role,
      incarnation: this.incarnation,
      ...(entry.writes !== undefined ? { writes: [...entry.writes] } : {}),
      expiresAt: Math.floor(nowMs + ttlMs),
      updatedAt: Math.floor(nowMs),
    };
    const checked = nodeEntrySchema.omit({ version: true, nonce: true }).safeParse(fields);
    if (!checked.success) throw new CairnError("INVALID_ARGUMENT", `invalid node entry: ${z.prettifyError(checked.error)}`);
    if (this.written !== null) {
      try {
        this.written = await this.object.replace(this.written, checked.data);
        return;
      } catch (error) {
        // Someone else changed or deleted it: read it back below.
        if (!isCasConflict(error)) throw error;
      }
    }
    try {
      this.written = await this.object.update((current) => {
        // Another process renews an entry under this node's id: two nodes would act as one.
        const grace = this.exclusiveGraceMs;
        if (grace !== null && current !== null && current.incarnation !== undefined && current.incarnation !== this.incarnation && current.expiresAt + grace > nowMs) {
          throw new CairnError("NODE_ID_IN_USE", `another process is registered as node ${JSON.stringify(this.nodeId)} (its entry is live until ${new Date(current.expiresAt).toISOString()}): give each node its own --node-id`, {
            details: { nodeId: this.nodeId, expiresAt: current.expiresAt, url: current.url },
          });
        }
        return checked.data;
      });
    } catch (error) {
      // An entry someone wrote by hand in another shape: replace it rather than never register.
      if (!hasErrorCode(error, "NODE_ENTRY_INVALID")) throw error;
      await this.store.delete(this.object.key);
      this.written = await this.object.update(() => checked.data);
    }
  }

  /**
   * Removes this node's entry (graceful shutdown): writers stop hinting it at once. An
   * exclusive entry is removed only while it is this process's: one that another process
   * took over (its incarnation) is left to it.
   */
  async remove(): Promise<void> {
    this.written = null;
    if (this.exclusiveGraceMs !== null) {
      const current = await this.object.read().catch(() => null);
      if (current !== null && current.value.incarnation !== this.incarnation) return;
    }
    await this.store.delete(this.object.key);
  }

  /** Every other live node of this deployment (one LIST plus a GET each, bounded); `graceMs` as for liveNodes. */
  live(nowMs: number, graceMs = 0): Promise<NodeEntry[]> {
    return liveNodes(this.store, this.deploymentId, this.random, nowMs, this.nodeId, graceMs);
  }
}

/**
 * The live nodes registered for `deploymentId`, but `exceptNodeId` (one LIST plus a GET
 * each, bounded by NODES_SCANNED_MAX): what a writer hints, the fleet's live set, and what
 * `cairn reshard` refuses to run under. `graceMs`: an entry counts as live until that long
 * after its expiry (the clock skew between nodes: a node whose clock is behind writes
 * expiries that look early here).
 */
export async function liveNodes(store: ObjectStore, deploymentId: string, random: Random, nowMs: number, exceptNodeId: string | null = null, graceMs = 0): Promise<NodeEntry[]> {
  const prefix = "nodes/";
  const entries: NodeEntry[] = [];
  let scanned = 0;
  for await (const listed of store.list(prefix)) {
    if (++scanned > NODES_SCANNED_MAX) break;
    const nodeId = listed.key.slice(prefix.length);
    if (nodeId === exceptNodeId || !NODE_ID_PATTERN.test(nodeId)) continue;
    try {
      const snapshot = await new CasObject(store, listed.key, nodeEntryCodec, random).read();
      const entry = snapshot?.value;
      if (entry !== undefined && entry.nodeId === nodeId && entry.deploymentId === deploymentId && entry.expiresAt + graceMs > nowMs) entries.push(entry);
      // A node that crashed never removes its entry: long-expired ones are cleared so
      // that leftovers do not crowd live nodes out of the scan bound.
      else if (entry !== undefined && entry.deploymentId === deploymentId && entry.expiresAt < nowMs - EXPIRED_ENTRY_KEPT_MS) await store.delete(listed.key);
    } catch (error) {
      if (!hasErrorCode(error, "NODE_ENTRY_INVALID")) throw error;
    }
  }
  return entries;
}
