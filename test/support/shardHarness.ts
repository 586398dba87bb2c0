import { mkdtempSync, rmSync } from "node:fs";
import { afterEach } from "vitest";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock, type Clock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { LocalStore, type LocalStoreOptions } from "../../src/local/index.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import type { EngineEvent } from "../../src/shard/ShardEngine.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { EngineDriver, ShardEngineTuning } from "../../src/shard/engineOptions.js";
import type { WriteUnit } from "../../src/shard/WriteUnit.js";
import { FaultyObjectStore } from "./FaultyObjectStore.js";

/**
 * One shard's deployment for scenario tests: a bucket (any ObjectStore), a manual clock
 * shared by all nodes, and nodes each with its own fault-injecting view of the bucket, its
 * own SQLite file in a temp directory and its own engine. Drivers sleep on the manual
 * clock, so nothing happens in the background unless a test moves time.
 */
export interface BucketFactory {
  readonly name: string;
  open(): Promise<{ readonly store: ObjectStore; readonly close: () => Promise<void> }>;
}

export interface HarnessNode {
  readonly name: string;
  readonly store: FaultyObjectStore;
  readonly local: LocalStore;
  readonly engine: ShardEngine;
  /** Every event the engine emitted, in order. */
  readonly events: EngineEvent[];
}

export interface NodeOptions {
  /** The node's own clock (default: the harness's shared manual clock). */
  readonly clock?: Clock;
  /** When its local store folds (default: LocalStore's defaults). */
  readonly fold?: LocalStoreOptions["fold"];
  /** Injects faults into the node's view of the bucket before its engine opens. */
  readonly beforeOpen?: (store: FaultyObjectStore) => void;
  /** The engine's drivers, instead of those the tuning implies (see `node`). */
  readonly drivers?: readonly EngineDriver[];
  /** Passed to the engine (default: its default, true). */
  readonly stepDownOnFailedRenewals?: boolean;
}

export const TABLE = 1;

export class ShardHarness {
  readonly clock = new ManualClock();
  private readonly nodes: HarnessNode[] = [];
  private seed = 1;
  private readonly directory = mkdtempSync(join(tmpdir(), "cairn-shard-"));

  private constructor(
    readonly bucket: ObjectStore,
    readonly deploymentId: string,
    private readonly closeBucket: () => Promise<void>,
  ) {}

  static async create(factory: BucketFactory): Promise<ShardHarness> {
    const { store, close } = await factory.open();
    const clock = new ManualClock();
    const globals = await openGlobals(store, { clock, random: new SeededRandom(0), numShards: 1 });
    return new ShardHarness(store, globals.value.deploymentId, close);
  }

  /**
   * Opens a node (follower) with its own local file; `tuning` overrides engine defaults.
   * Its heartbeat and maintenance drivers run only when the test sets their interval;
   * otherwise they never fire on their own (a node whose clock moves but whose drivers do
   * not is a paused process) and tests call them explicitly. `options.drivers` overrides
   * that choice.
   */
  async node(name: string, tuning: Partial<ShardEngineTuning> = {}, options: NodeOptions = {}): Promise<HarnessNode> {
    const drivers = options.drivers ?? [
      ...(tuning.heartbeatIntervalMs !== undefined ? (["heartbeat"] as const) : []),
      ...(tuning.maintenanceIntervalMs !== undefined ? (["maintenance"] as const) : []),
    ];
    const random = new SeededRandom(this.seed++);
    const store = new FaultyObjectStore(this.bucket, random, this.clock);
    options.beforeOpen?.(store);
    const local = LocalStore.open({
      path: this.localPath(name),
      shard: 0,
      deploymentId: this.deploymentId,
      ...(options.fold ? { fold: options.fold } : {}),
    });
    const clock = options.clock ?? this.clock;
    const events: EngineEvent[] = [];
    let engine: ShardEngine;
    try {
      engine = await ShardEngine.open({
        store,
        deploymentId: this.deploymentId,
        shard: 0,
        local,
        nodeId: name,
        clock,
        random,
        hybridClock: new HybridClock(clock),
        tuning,
        drivers,
        ...(options.stepDownOnFailedRenewals !== undefined ? { stepDownOnFailedRenewals: options.stepDownOnFailedRenewals } : {}),
        onEvent: (event) => events.push(event),
      });
    } catch (error) {
      local.close();
      throw error;
    }
    const node = { name, store, local, engine, events };
    this.nodes.push(node);
    return node;
  }

  async writer(name: string, tuning: Partial<ShardEngineTuning> = {}, options: NodeOptions = {}): Promise<HarnessNode> {
    const node = await this.node(name, tuning, options);
    await node.engine.acquire();
    return node;
  }

  /** The local file of nodes named `name`. */
  localPath(name: string): string {
    return join(this.directory, `${name}.sqlite`);
  }

  /**
   * Stops a node, leaving its local file for a later node of the same name: the engine
   * closes (without relinquishing), and the local store folds what it holds in memory
   * first, as a clean shutdown does.
   */
  async stop(node: HarnessNode): Promise<void> {
    node.store.releaseAll();
    await node.engine.close();
    await node.local.flush();
    node.local.close();
    this.nodes.splice(this.nodes.indexOf(node), 1);
  }

  /**
   * Stops a node as a crash would: the local store closes without folding, abandoning
   * any fold in flight, so its file stands wherever its last committed fold left it.
   */
  async crash(node: HarnessNode): Promise<void> {
    node.store.releaseAll();
    node.local.close();
    await node.engine.close().catch(() => undefined);
    this.nodes.splice(this.nodes.indexOf(node), 1);
  }

  /** Every object in the bucket, as a backup an operator could restore later. */
  async backupBucket(): Promise<Map<string, Uint8Array>> {
    const backup = new Map<string, Uint8Array>();
    for await (const entry of this.bucket.list("")) {
      const object = await this.bucket.get(entry.key);
      if (object !== null && object !== "not-modified") backup.set(entry.key, object.body);
    }
    return backup;
  }

  /** Replaces the bucket's whole content with `backup` (a restore from an older copy). */
  async restoreBucket(backup: ReadonlyMap<string, Uint8Array>): Promise<void> {
    const keys: string[] = [];
    for await (const entry of this.bucket.list("")) keys.push(entry.key);
    await this.bucket.deleteMany(keys);
    for (const [key, body] of backup) await this.bucket.create(key, body);
  }

  newId(): DocumentId {
    return newDocumentId(TABLE, new SeededRandom(this.seed++));
  }

  async close(): Promise<void> {
    for (const node of this.nodes) {
      node.store.releaseAll();
      await node.engine.close().catch(() => undefined);
      node.local.close();
    }
    await this.closeBucket();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/** A blind insert of one document with a receipt, the smallest useful write unit. */
export function insertUnit(engine: ShardEngine, id: DocumentId, body: unknown, receipt?: { clientId: string; seq: number }): WriteUnit {
  return {
    readTs: engine.readTs,
    documents: [{ tableNumber: TABLE, id, value: JSON.stringify(body), prevTs: null }],
    indexWrites: [],
    ...(receipt ? { receipt: { ...receipt, result: '"ok"', route: null } } : {}),
  };
}

/** Commits `count` blind inserts on `node`, one after another. */
export async function commitMany(node: HarnessNode, h: ShardHarness, count: number): Promise<void> {
  for (let index = 0; index < count; index++) await node.engine.commit(insertUnit(node.engine, h.newId(), { index }));
}

/**
 * For a describe block: returns a function that creates the test's harness on `factory`,
 * and closes whatever harness a test created after it.
 */
export function harnessPerTest(factory: BucketFactory): () => Promise<ShardHarness> {
  let harness: ShardHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return async () => {
    harness = await ShardHarness.create(factory);
    return harness;
  };
}
