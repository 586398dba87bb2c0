/**
 * The model the history tests (restore, branches) compare with: every acknowledged change
 * of the history app's notes with its commit ts, and the state at any ts; plus the
 * timestamps that fall inside a segment of a deployment's log (a commit below and one
 * above in the same segment), where a restore or branch must cut.
 */
import { systemRandom } from "../../src/base/random.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { readLog } from "../../src/segments/logReader.js";

export interface Note {
  readonly id: DocumentId;
  readonly channel: string;
  readonly n: number;
  readonly body: string;
}

/** One acknowledged mutation: its commit ts and what it did. */
export type Change = { readonly ts: number; readonly kind: "put"; readonly note: Note } | { readonly ts: number; readonly kind: "remove"; readonly id: DocumentId };

/** The model's documents at `ts` (changes in ts order), by id. */
export function stateAt(changes: readonly Change[], ts: number): Note[] {
  const state = new Map<DocumentId, Note>();
  for (const change of changes) {
    if (change.ts > ts) break;
    if (change.kind === "put") state.set(change.note.id, change.note);
    else state.delete(change.id);
  }
  return [...state.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** Timestamps strictly between a segment's first and last commit, read from what the log of each of `shards` still holds. */
export async function timestampsInsideSegments(store: ObjectStore, shards: number): Promise<number[]> {
  const globals = (await globalsObject(store, systemRandom).read())!.value;
  const inside: number[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const manifest = await new ShardManifest(store, shard, globals.deploymentId, systemRandom).refresh();
    for await (const segment of readLog(store, { deploymentId: globals.deploymentId, shard, fromSeqno: manifest.logStart, concurrency: 8 })) {
      const stamps = [...new Set(segment.records.revisions.map((revision) => revision.ts))].sort((a, b) => a - b);
      if (stamps.length >= 2) inside.push(stamps[0]!);
    }
  }
  return inside;
}
