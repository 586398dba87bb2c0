/**
 * The fleet simulation's verdict on one shard's whole log (every segment ever part of it,
 * kept by ArchivingObjectStore although GC deleted them from the bucket) and on what its
 * followers showed while they tailed it.
 */
import { LogValidator, LOG_START, type LogPosition } from "../../src/segments/LogValidator.js";
import { readLog } from "../../src/segments/logReader.js";
import type { Segment } from "../../src/segments/Segment.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import type { Bank } from "./bank.js";

/** A writer became a shard's owner: its engine's "acquired" event. */
export interface Acquisition {
  readonly shard: number;
  readonly epoch: number;
  readonly nodeId: string;
  readonly fenceSeqno: number;
}

/** A document version a follower showed at its common frontier. */
export interface FollowerObservation {
  readonly follower: string;
  readonly shard: number;
  readonly id: string;
  readonly ts: number;
  readonly value: string;
  readonly frontierTs: number;
}

export interface WholeLogContext {
  readonly archive: ObjectStore;
  readonly deploymentId: string;
  readonly bank: Bank;
  /** This shard's acquisitions. */
  readonly acquisitions: readonly Acquisition[];
  /** The node a receipt's client (a node's process) ran on. */
  readonly nodeOfClient: (clientId: string) => string;
  readonly observations: readonly FollowerObservation[];
  /** Where a fresh reader of the bucket finds the log's end. */
  readonly endPosition: LogPosition;
}

interface Placed {
  readonly seqno: number;
  readonly epoch: number;
  readonly writer: string;
  readonly ts: number;
}

/**
 * - the whole log chains from its start to where a fresh reader ends;
 * - every acknowledged unit is in it exactly once, at its ts, in a segment of the node
 *   that acknowledged it; no unit is in it twice; none that was refused is in it;
 * - one epoch, one writer: every segment of an epoch names the same node, an epoch is
 *   acquired once, by that node; the fences' epochs strictly increase along the log;
 * - no unit was acknowledged from a segment behind the fence of a newer epoch (a fenced
 *   zombie acknowledges nothing after its fence);
 * - every document version a follower showed was written by a unit of the log.
 */
export async function checkWholeLog(context: WholeLogContext): Promise<string[]> {
  const { bank } = context;
  const violations: string[] = [];
  const applied: Segment[] = [];
  const validator = new LogValidator(bank.shard, LOG_START);
  try {
    for await (const segment of readLog(context.archive, { deploymentId: context.deploymentId, shard: bank.shard, fromSeqno: 0, concurrency: 8 })) {
      if (validator.accept(segment) === "apply") applied.push(segment);
    }
  } catch (error) {
    violations.push(`the whole log does not validate: ${String(error)}`);
  }
  if (JSON.stringify(validator.position) !== JSON.stringify(context.endPosition)) {
    violations.push(`the whole log ends at ${JSON.stringify(validator.position)}, the bucket's at ${JSON.stringify(context.endPosition)}`);
  }
  const placed = placeUnits(applied, violations);
  checkOutcomes(context, placed, violations);
  checkEpochs(context, applied, placed, violations);
  checkObservations(context, applied, violations);
  return violations.map((violation) => `shard ${bank.shard}: ${violation}`);
}

/** Where each unit of the log sits; a receipt twice in the log is a unit applied twice. */
function placeUnits(applied: readonly Segment[], violations: string[]): Map<string, Placed> {
  const placed = new Map<string, Placed>();
  for (const segment of applied) {
    const { seqno, epoch, writer } = segment.header;
    for (const receipt of segment.records.receipts) {
      const key = `${receipt.clientId}:${receipt.seq}`;
      const earlier = placed.get(key);
      if (earlier !== undefined) violations.push(`${key} is in the log twice: at ${earlier.seqno} and ${seqno}`);
      else placed.set(key, { seqno, epoch, writer, ts: receipt.ts });
    }
  }
  return placed;
}

function checkOutcomes(context: WholeLogContext, placed: ReadonlyMap<string, Placed>, violations: string[]): void {
  for (const [key, outcome] of context.bank.outcomes) {
    const place = placed.get(key);
    if (outcome.kind === "not-committed" && place !== undefined) violations.push(`${key} was refused (${outcome.code}) but is in the log at ${place.seqno}`);
    if (outcome.kind !== "acknowledged") continue;
    if (place === undefined) {
      violations.push(`acknowledged ${key} is not in the log`);
      continue;
    }
    if (place.ts !== outcome.ts) violations.push(`acknowledged ${key} at ts ${outcome.ts} is in the log at ts ${place.ts}`);
    const node = context.nodeOfClient(key.split(":")[0]!);
    if (place.writer !== node) violations.push(`${key} was acknowledged by ${node} but written by ${place.writer} (segment ${place.seqno})`);
  }
}

function checkEpochs(context: WholeLogContext, applied: readonly Segment[], placed: ReadonlyMap<string, Placed>, violations: string[]): void {
  const writerOfEpoch = new Map<number, string>();
  const fences: { readonly seqno: number; readonly epoch: number }[] = [];
  for (const { header } of applied) {
    const writer = writerOfEpoch.get(header.epoch);
    if (writer !== undefined && writer !== header.writer) violations.push(`epoch ${header.epoch} has segments of ${writer} and of ${header.writer}`);
    writerOfEpoch.set(header.epoch, header.writer);
    if (header.kind !== "fence") continue;
    const previous = fences.at(-1);
    if (previous !== undefined && header.epoch <= previous.epoch) violations.push(`fence of epoch ${header.epoch} at ${header.seqno} follows one of epoch ${previous.epoch}`);
    fences.push({ seqno: header.seqno, epoch: header.epoch });
  }
  const acquirers = new Map<number, string>();
  for (const acquisition of context.acquisitions) {
    const earlier = acquirers.get(acquisition.epoch);
    if (earlier !== undefined) violations.push(`epoch ${acquisition.epoch} was acquired by ${earlier} and again by ${acquisition.nodeId}`);
    acquirers.set(acquisition.epoch, acquisition.nodeId);
    const writer = writerOfEpoch.get(acquisition.epoch);
    if (writer !== acquisition.nodeId) violations.push(`${acquisition.nodeId} acquired epoch ${acquisition.epoch} but the log's segments of that epoch are ${writer ?? "absent"}'s`);
  }
  for (const [key, place] of placed) {
    if (context.bank.outcomes.get(key)?.kind !== "acknowledged") continue;
    const passed = fences.find((fence) => fence.seqno < place.seqno && fence.epoch > place.epoch);
    if (passed !== undefined) violations.push(`${key} of epoch ${place.epoch} was acknowledged at ${place.seqno}, behind the fence of epoch ${passed.epoch} at ${passed.seqno}`);
  }
}

/**
 * A follower shows only versions some unit of the log wrote, and only units whose
 * committer heard they were acknowledged or could not tell (never a refused write's).
 */
function checkObservations(context: WholeLogContext, applied: readonly Segment[], violations: string[]): void {
  const versions = new Map<string, { readonly value: string | null; readonly unit: string | undefined }>();
  for (const { records } of applied) {
    const unitAt = new Map(records.receipts.map((receipt) => [receipt.ts, `${receipt.clientId}:${receipt.seq}`]));
    for (const revision of records.revisions) versions.set(`${revision.id}@${revision.ts}`, { value: revision.value, unit: unitAt.get(revision.ts) });
  }
  for (const seen of context.observations) {
    if (seen.shard !== context.bank.shard) continue;
    const shown = `${seen.follower} showed account ${seen.id} as ${seen.value} (ts ${seen.ts}) at frontier ${seen.frontierTs}`;
    const written = versions.get(`${seen.id}@${seen.ts}`);
    if (written?.value !== seen.value) {
      violations.push(`${shown}; the log wrote ${written === undefined ? "nothing" : written.value} there`);
      continue;
    }
    const outcome = written.unit === undefined ? undefined : context.bank.outcomes.get(written.unit)?.kind;
    if (outcome !== "acknowledged" && outcome !== "unknown") violations.push(`${shown}, written by ${written.unit ?? "no unit"} whose outcome is ${outcome ?? "unrecorded"}`);
  }
}
