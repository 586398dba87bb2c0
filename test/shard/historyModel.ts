/**
 * The model the history tests (restore, branches) compare with: every acknowledged change
 * of the history app's notes with its commit ts, and the state at any ts; plus the
 * timestamps that fall inside a segment of a deployment's log (a commit below and one
 * above in the same segment), where a restore or branch must cut; and the random step
 * both tests' histories are made of.
 */
import { randomInt, systemRandom, type Random } from "../../src/base/random.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
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

/**
 * One random change through `runtime`, recorded in `notes` (the live state) and returned:
 * a new note in a random channel (or whenever no note is free), else an edit, a
 * renumbering (an index entry moves) or a delete of a note no other change of the same
 * round touches (`touched`).
 */
export async function randomChange(
  runtime: FunctionRuntime,
  random: Random,
  notes: Map<DocumentId, Note>,
  touched: Set<DocumentId>,
  round: number,
  channels: readonly string[],
  nextN: () => number,
): Promise<Change> {
  const candidates = [...notes.values()].filter((note) => !touched.has(note.id));
  const pick = candidates.length > 0 && randomInt(random, 10) < 6 ? candidates[randomInt(random, candidates.length)]! : null;
  if (pick === null) {
    const n = nextN();
    const note = { channel: channels[randomInt(random, channels.length)]!, n, body: `note ${n + 1}` };
    const run = await runtime.runMutation("notes:add", note);
    const id = run.value as DocumentId;
    notes.set(id, { id, ...note });
    return { ts: run.ts, kind: "put", note: { id, ...note } };
  }
  touched.add(pick.id);
  const choice = randomInt(random, 3);
  if (choice === 2) {
    const run = await runtime.runMutation("notes:remove", { id: pick.id, channel: pick.channel });
    notes.delete(pick.id);
    return { ts: run.ts, kind: "remove", id: pick.id };
  }
  const changed = choice === 0 ? { ...pick, body: `${pick.body}, edited in round ${round}` } : { ...pick, n: randomInt(random, 1_000) };
  const run =
    choice === 0
      ? await runtime.runMutation("notes:edit", { id: pick.id, channel: pick.channel, body: changed.body })
      : await runtime.runMutation("notes:renumber", { id: pick.id, channel: pick.channel, n: changed.n });
  notes.set(pick.id, changed);
  return { ts: run.ts, kind: "put", note: changed };
}
