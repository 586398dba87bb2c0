import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import type { PutResult } from "../../src/objectstore/ObjectStore.js";

/**
 * The simulation's bucket, keeping on the side the first object ever created at each key:
 * GC deletes the log below a snapshot, but the checks after the run need the whole log.
 * A slot is created once while it is part of the live log (creates are if-absent and
 * nothing at or above logStart is deleted), so the first object at a segment's key is
 * the one the log holds; a zombie's create into a collected slot, later, is not archived.
 */
export class ArchivingMemoryStore extends MemoryObjectStore {
  /** The first object created at every key, never deleted. */
  readonly archive = new MemoryObjectStore();

  override async create(key: string, body: Uint8Array): Promise<PutResult> {
    const result = await super.create(key, body);
    if ((await this.archive.get(key)) === null) await this.archive.create(key, body);
    return result;
  }
}
