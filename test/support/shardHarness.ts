import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
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
}

export const TABLE = 1;
/** A driver interval the manual clock never reaches in a test. */
const DRIVERS_NEVER_MS = 1e12;

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
   * Its heartbeat and maintenance drivers never fire on their own (a node whose clock
   * moves but whose drivers do not is a paused process); tests call them explicitly.
   */
  async node(name: string, overrides: Partial<ShardEngineTuning> = {}): Promise<HarnessNode> {
    const tuning = { heartbeatIntervalMs: DRIVERS_NEVER_MS, maintenanceIntervalMs: DRIVERS_NEVER_MS, ...overrides };
    const random = new SeededRandom(this.seed++);
    const store = new FaultyObjectStore(this.bucket, random, this.clock);
    const local = LocalStore.open({ path: join(this.directory, `${name}.sqlite`), shard: 0, deploymentId: this.deploymentId });
    const engine = await ShardEngine.open({
      store,
      deploymentId: this.deploymentId,
      shard: 0,
      local,
      nodeId: name,
      clock: this.clock,
      random,
      hybridClock: new HybridClock(this.clock),
      tuning,
    });
    const node = { name, store, local, engine };
    this.nodes.push(node);
    return node;
  }

  async writer(name: string, tuning: Partial<ShardEngineTuning> = {}): Promise<HarnessNode> {
    const node = await this.node(name, tuning);
    await node.engine.acquire();
    return node;
  }

  /** Stops a node as a crash would leave it: the engine closes, its local file stays. */
  async stop(node: HarnessNode): Promise<void> {
    node.store.releaseAll();
    await node.engine.close();
    node.local.close();
    this.nodes.splice(this.nodes.indexOf(node), 1);
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
    ...(receipt ? { receipt: { ...receipt, result: '"ok"' } } : {}),
  };
}
