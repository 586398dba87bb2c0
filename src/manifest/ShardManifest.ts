import { CairnError, isCasConflict, type Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { bucketLayout } from "./bucketLayout.js";
import { CasObject, type CasFields, type CasSnapshot } from "./CasObject.js";
import {
  initialManifestFields,
  isLeaseLive,
  manifestCodec,
  withFenceRecord,
  type Manifest,
  type WriterIdentity,
} from "./Manifest.js";

/**
 * One shard's manifest as seen by one node: the last snapshot read or written, and the
 * lease operations of DESIGN.md §4.
 *
 * Invariants:
 * - Updates made as the owner are serialized (one CAS in flight per node and shard), so
 *   the node's own heartbeat, snapshot and GC never race each other; a CAS conflict
 *   therefore means another node changed the manifest.
 * - Before every owner CAS the cached manifest must name this node at the owner's epoch;
 *   after a conflict the manifest is re-read and, unless it still does, FENCED is thrown.
 * - A lease is refused while another writer's lease is live (now <= leaseExpiresAt).
 */
const OWNER_UPDATE_ATTEMPTS_MAX = 4;
const ACQUIRE_ATTEMPTS_MAX = 8;

export interface LeaseOwner {
  readonly nodeId: string;
  readonly epoch: number;
}

export class ShardManifest {
  private readonly object: CasObject<Manifest>;
  private snapshot: CasSnapshot<Manifest> | null = null;
  private ownerUpdates: Promise<unknown> = Promise.resolve();
  private readonly epochListeners = new Set<(manifest: Manifest) => void>();

  constructor(
    store: ObjectStore,
    readonly shard: number,
    readonly deploymentId: string,
    random: Random,
  ) {
    this.object = new CasObject(store, bucketLayout.manifest(shard), manifestCodec, random);
  }

  /** The last manifest this node read or wrote. */
  get current(): Manifest {
    return this.cached().value;
  }

  get currentEtag(): string {
    return this.cached().etag;
  }

  /** Reads the manifest, creating the shard's first one if the shard is new. */
  async load(): Promise<Manifest> {
    let snapshot = await this.object.read();
    if (snapshot === null) {
      try {
        snapshot = await this.object.create(initialManifestFields(this.deploymentId, this.shard));
      } catch (error) {
        if (!isCasConflict(error)) throw error;
        snapshot = await this.object.read();
      }
    }
    return this.adopt(snapshot).value;
  }

  /**
   * Re-reads the manifest with a conditional GET (cheap when nothing changed). A read that
   * finds an older version than the one cached is read once more: versions only grow, so
   * an older one seen again by a GET sent after both reads completed is no reordering of
   * overlapping reads but the bucket's state now — it was restored from an older copy —
   * and is adopted (checkLocalPosition then judges the local copy against it).
   */
  async refresh(): Promise<Manifest> {
    const refreshed = this.snapshot === null ? await this.object.read() : await this.object.refresh(this.snapshot);
    if (refreshed === null || this.snapshot === null || refreshed.value.version >= this.snapshot.value.version) return this.adopt(refreshed).value;
    // Compared with what was cached when the second GET was sent: a write completing while
    // it is in flight may be newer than what the GET saw, and is no rollback.
    const seenVersion = this.snapshot.value.version;
    const again = await this.object.read();
    return this.adopt(again, { rolledBack: again !== null && again.value.version < seenVersion }).value;
  }

  /**
   * Takes the lease (DESIGN.md §4, acquire steps 1–2): refuses a live lease held by
   * another node, otherwise bumps the epoch and names `writer`. Returns the new manifest.
   */
  async acquire(writer: WriterIdentity, nowMs: number, leaseTtlMs: number): Promise<Manifest> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.refresh();
      if (isLeaseLive(current, nowMs) && current.writer?.nodeId !== writer.nodeId) {
        throw new CairnError(
          "LEASE_HELD",
          `shard ${this.shard} is owned by ${current.writer?.nodeId} until ${new Date(current.leaseExpiresAt).toISOString()}`,
          { details: { shard: this.shard, holder: current.writer, leaseExpiresAt: current.leaseExpiresAt } },
        );
      }
      try {
        const next = await this.object.replace(this.cached(), {
          ...fieldsOf(current),
          epoch: current.epoch + 1,
          writer,
          leaseExpiresAt: nowMs + leaseTtlMs,
        });
        return this.adopt(next).value;
      } catch (error) {
        if (!isCasConflict(error) || attempt >= ACQUIRE_ATTEMPTS_MAX) throw error;
      }
    }
  }

  /** Renews the lease; FENCED if another node took the shard. */
  async heartbeat(owner: LeaseOwner, nowMs: number, leaseTtlMs: number, tailHint: number): Promise<Manifest> {
    return this.updateAsOwner(owner, (current) => ({
      ...current,
      leaseExpiresAt: nowMs + leaseTtlMs,
      tailHint: Math.max(current.tailHint, tailHint),
    }));
  }

  /**
   * Records where this epoch's fence landed (DESIGN.md §4 verify): a writer of an older
   * epoch whose segment's slot has been collected decides from it whether that segment
   * was part of the log.
   */
  async recordFence(owner: LeaseOwner, seqno: number): Promise<Manifest> {
    return this.updateAsOwner(owner, (current) => ({
      ...current,
      fences: withFenceRecord(current.fences, { epoch: owner.epoch, seqno }),
    }));
  }

  /** Clears the lease so that a successor can take over at once. */
  async relinquish(owner: LeaseOwner): Promise<Manifest> {
    return this.updateAsOwner(owner, (current) => ({ ...current, writer: null, leaseExpiresAt: 0 }));
  }

  /**
   * A CAS made as the lease owner (snapshot pointer, logStart, heartbeat). `mutate` gets
   * the current fields and returns the new ones; it may be called again after a conflict.
   */
  updateAsOwner(owner: LeaseOwner, mutate: (current: CasFields<Manifest>) => CasFields<Manifest>): Promise<Manifest> {
    const run = this.ownerUpdates.then(() => this.casAsOwner(owner, mutate));
    this.ownerUpdates = run.catch(() => undefined);
    return run;
  }

  private async casAsOwner(
    owner: LeaseOwner,
    mutate: (current: CasFields<Manifest>) => CasFields<Manifest>,
  ): Promise<Manifest> {
    for (let attempt = 1; ; attempt++) {
      const current = this.cached();
      this.assertOwner(current.value, owner);
      const fields = mutate(fieldsOf(current.value));
      const handsOver = fields.writer !== null && fields.writer.nodeId !== owner.nodeId;
      if (fields.epoch !== owner.epoch || handsOver) {
        throw new CairnError("INTERNAL", "an owner update may not change the epoch or hand the lease to another node");
      }
      try {
        return this.adopt(await this.object.replace(current, fields)).value;
      } catch (error) {
        if (!isCasConflict(error)) throw error;
        const reread = await this.refresh();
        this.assertOwner(reread, owner);
        if (attempt >= OWNER_UPDATE_ATTEMPTS_MAX) throw error;
      }
    }
  }

  private assertOwner(manifest: Manifest, owner: LeaseOwner): void {
    if (manifest.epoch !== owner.epoch || manifest.writer?.nodeId !== owner.nodeId) {
      throw new CairnError(
        "FENCED",
        `shard ${this.shard}: epoch ${owner.epoch} of ${owner.nodeId} was fenced ` +
          `(manifest epoch ${manifest.epoch}, writer ${manifest.writer?.nodeId ?? "none"})`,
        { details: { shard: this.shard, ownEpoch: owner.epoch, manifestEpoch: manifest.epoch } },
      );
    }
  }

  private adopt(snapshot: CasSnapshot<Manifest> | null, options: { readonly rolledBack?: boolean } = {}): CasSnapshot<Manifest> {
    if (snapshot === null) {
      throw new CairnError(
        "MANIFEST_INVALID",
        `the manifest of shard ${this.shard} disappeared from the bucket (if the deployment was resharded, restart this node to serve the new layout)`,
      );
    }
    const manifest = snapshot.value;
    if (manifest.deploymentId !== this.deploymentId) {
      throw new CairnError(
        "DEPLOYMENT_MISMATCH",
        `shard ${this.shard}'s manifest belongs to deployment ${manifest.deploymentId}, not ${this.deploymentId}`,
        { details: { expected: this.deploymentId, actual: manifest.deploymentId } },
      );
    }
    if (manifest.shard !== this.shard) {
      throw new CairnError("MANIFEST_INVALID", `manifest at shard ${this.shard}'s key names shard ${manifest.shard}`);
    }
    // Reads and owner writes may overlap; versions only grow, so keep the newest (but for
    // a bucket restored from an older copy, see refresh).
    if (this.snapshot !== null && this.snapshot.value.version > manifest.version && options.rolledBack !== true) return this.snapshot;
    const newEpoch = this.snapshot !== null && manifest.epoch > this.snapshot.value.epoch;
    this.snapshot = snapshot;
    if (newEpoch) this.notifyEpoch(manifest);
    return snapshot;
  }

  /**
   * Listens to every newer epoch this node learns of, by any read or write: a takeover
   * (the writer who holds the lease now). Routing follows it (DESIGN.md §9).
   */
  onNewEpoch(listener: (manifest: Manifest) => void): () => void {
    this.epochListeners.add(listener);
    return () => this.epochListeners.delete(listener);
  }

  private notifyEpoch(manifest: Manifest): void {
    for (const listener of this.epochListeners) {
      try {
        listener(manifest);
      } catch {
        // A listener's failure must not change what the manifest holds.
      }
    }
  }

  private cached(): CasSnapshot<Manifest> {
    if (this.snapshot === null) throw new CairnError("INTERNAL", "manifest used before load()");
    return this.snapshot;
  }
}

function fieldsOf(manifest: Manifest): CasFields<Manifest> {
  const { version: _version, nonce: _nonce, ...fields } = manifest;
  return fields;
}
