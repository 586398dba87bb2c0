import { CairnError, PROTOCOL_NAME_CHARS_MAX } from "../base/index.js";
import type { JsonValue } from "../model/ValueJson.js";
import { crc32 } from "./crc32.js";

/**
 * What a client's outbox persists, and its text form. The record holds the client's id,
 * the next seq it would assign, and every mutation it made that has no answer yet, in
 * seq order. A reloaded client takes the id and the numbering back, so a mutation the
 * server applied before the reload is answered from its receipt, never applied again.
 *
 * Text form: a header line `cairn-outbox 1 <crc32 of the body, 8 hex digits>`, then the
 * body as JSON. A record that fails any check (header, checksum, shape, seq order) is
 * OUTBOX_INVALID as a whole: a mutation read from a damaged record could carry a wrong
 * seq and be applied twice, so none of it is trusted.
 */

export interface OutboxMutation {
  readonly seq: number;
  readonly path: string;
  readonly args: JsonValue;
}

export interface OutboxRecord {
  readonly clientId: string;
  /** The seq the client assigns next: above every seq it ever sent. */
  readonly nextSeq: number;
  /** Mutations made and not answered, in increasing seq order. */
  readonly mutations: readonly OutboxMutation[];
}

const FORMAT = "cairn-outbox";
const VERSION = 1;
/** A client id is at most this long: the server's bound on a receipt's client id. */
const CLIENT_ID_CHARS_MAX = 256;

export function encodeOutboxRecord(record: OutboxRecord): string {
  const body = JSON.stringify({ clientId: record.clientId, nextSeq: record.nextSeq, mutations: record.mutations });
  return `${FORMAT} ${VERSION} ${hex8(crc32(body))}\n${body}`;
}

/** The record in `text`; OUTBOX_INVALID saying what is wrong (`where` names the store in the message). */
export function decodeOutboxRecord(text: string, where: string): OutboxRecord {
  const newline = text.indexOf("\n");
  const header = newline < 0 ? text : text.slice(0, newline);
  const match = /^cairn-outbox (\d+) ([0-9a-f]{8})$/.exec(header);
  if (match === null) throw invalid(where, "its first line is not a cairn-outbox header");
  if (Number(match[1]) !== VERSION) throw invalid(where, `it is version ${match[1]}; this client reads version ${VERSION}`);
  const body = text.slice(newline + 1);
  if (hex8(crc32(body)) !== match[2]) throw invalid(where, "its checksum does not match (the record is torn or was altered)");
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw invalid(where, "its body is not JSON");
  }
  const problem = recordProblem(raw);
  if (problem !== null) throw invalid(where, problem);
  return raw as OutboxRecord;
}

/** What is wrong with a parsed body, or null. Checked by hand: the client bundle carries no schema library for one record. */
function recordProblem(raw: unknown): string | null {
  if (!isObject(raw) || !sameKeys(raw, ["clientId", "nextSeq", "mutations"])) return "its body is not {clientId, nextSeq, mutations}";
  const { clientId, nextSeq, mutations } = raw;
  if (typeof clientId !== "string" || clientId.length === 0 || clientId.length > CLIENT_ID_CHARS_MAX) return `clientId must be 1 to ${CLIENT_ID_CHARS_MAX} characters`;
  if (!isSeq(nextSeq)) return "nextSeq must be a positive integer";
  if (!Array.isArray(mutations)) return "mutations must be a list";
  let previous = 0;
  for (const [at, mutation] of mutations.entries()) {
    if (!isObject(mutation) || !sameKeys(mutation, ["seq", "path", "args"])) return `mutations[${at}] is not {seq, path, args}`;
    const { seq, path } = mutation;
    if (!isSeq(seq) || seq <= previous) return `mutations[${at}].seq must be an integer above ${previous} (seqs increase)`;
    if (typeof path !== "string" || path.length === 0 || path.length > PROTOCOL_NAME_CHARS_MAX) return `mutations[${at}].path must be 1 to ${PROTOCOL_NAME_CHARS_MAX} characters`;
    previous = seq;
  }
  if (nextSeq <= previous) return `nextSeq ${nextSeq} is not above the last seq ${previous}`;
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sameKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((key) => Object.hasOwn(value, key));
}

function isSeq(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1;
}

function invalid(where: string, why: string): CairnError {
  return new CairnError("OUTBOX_INVALID", `the outbox ${where} is unreadable: ${why}; none of its mutations is sent`, { details: { outbox: where } });
}

function hex8(value: number): string {
  return value.toString(16).padStart(8, "0");
}
