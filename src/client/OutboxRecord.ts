import { AUTH_TOKEN_CHARS_MAX, CairnError, PROTOCOL_NAME_CHARS_MAX } from "../base/index.js";
import type { JsonValue } from "../model/ValueJson.js";
import { UNKNOWN_IDENTITY, type AuthIdentity } from "./AuthIdentity.js";
import { crc32 } from "./crc32.js";

/**
 * What a client's outbox persists, and its text form. The record holds the client's id,
 * the next seq it would assign, and every mutation it made that has no answer yet, in
 * seq order. A reloaded client takes the id and the numbering back, so a mutation the
 * server applied before the reload is answered from its receipt, never applied again.
 *
 * Each mutation carries the identity it was issued under (`issuedAs`): a reloaded client
 * sends it only while signed in as that identity, never as another user or anonymously.
 *
 * Text form: a header line `cairn-outbox <version> <crc32 of the body, 8 hex digits>`,
 * then the body as JSON. A record that fails any check (header, checksum, shape, seq
 * order) is OUTBOX_INVALID as a whole: a mutation read from a damaged record could carry
 * a wrong seq and be applied twice, so none of it is trusted.
 *
 * Versions: 2 is written. 1 (before identities) is still read, each of its mutations of
 * unknown identity: it may have been issued by any user, so it is held, never sent, and
 * reported for the app to discard. Sending it anonymously or under whoever signs in could
 * run one user's mutation as another; holding it loses nothing the app cannot see.
 */

export interface OutboxMutation {
  readonly seq: number;
  readonly path: string;
  readonly args: JsonValue;
  readonly issuedAs: AuthIdentity;
}

export interface OutboxRecord {
  readonly clientId: string;
  /** The seq the client assigns next: above every seq it ever sent. */
  readonly nextSeq: number;
  /** Mutations made and not answered, in increasing seq order. */
  readonly mutations: readonly OutboxMutation[];
}

const FORMAT = "cairn-outbox";
const VERSION = 2;
/** The version without `issuedAs`, still read. */
const VERSION_BEFORE_IDENTITIES = 1;
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
  const version = Number(match[1]);
  if (version !== VERSION && version !== VERSION_BEFORE_IDENTITIES) throw invalid(where, `it is version ${match[1]}; this client reads versions ${VERSION_BEFORE_IDENTITIES} and ${VERSION}`);
  const body = text.slice(newline + 1);
  if (hex8(crc32(body)) !== match[2]) throw invalid(where, "its checksum does not match (the record is torn or was altered)");
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw invalid(where, "its body is not JSON");
  }
  const problem = recordProblem(raw, version === VERSION);
  if (problem !== null) throw invalid(where, problem);
  const record = raw as OutboxRecord;
  if (version === VERSION) return record;
  return { ...record, mutations: record.mutations.map((mutation) => ({ ...mutation, issuedAs: UNKNOWN_IDENTITY })) };
}

/** What is wrong with a parsed body, or null. Checked by hand: the client bundle carries no schema library for one record. */
function recordProblem(raw: unknown, withIdentities: boolean): string | null {
  if (!isObject(raw) || !sameKeys(raw, ["clientId", "nextSeq", "mutations"])) return "its body is not {clientId, nextSeq, mutations}";
  const { clientId, nextSeq, mutations } = raw;
  if (typeof clientId !== "string" || clientId.length === 0 || clientId.length > CLIENT_ID_CHARS_MAX) return `clientId must be 1 to ${CLIENT_ID_CHARS_MAX} characters`;
  if (!isSeq(nextSeq)) return "nextSeq must be a positive integer";
  if (!Array.isArray(mutations)) return "mutations must be a list";
  const keys = withIdentities ? ["seq", "path", "args", "issuedAs"] : ["seq", "path", "args"];
  let previous = 0;
  for (const [at, mutation] of mutations.entries()) {
    if (!isObject(mutation) || !sameKeys(mutation, keys)) return `mutations[${at}] is not {${keys.join(", ")}}`;
    const { seq, path } = mutation;
    if (!isSeq(seq) || seq <= previous) return `mutations[${at}].seq must be an integer above ${previous} (seqs increase)`;
    if (typeof path !== "string" || path.length === 0 || path.length > PROTOCOL_NAME_CHARS_MAX) return `mutations[${at}].path must be 1 to ${PROTOCOL_NAME_CHARS_MAX} characters`;
    if (withIdentities && !isIdentity(mutation.issuedAs)) return `mutations[${at}].issuedAs is not {kind: "anonymous" | "unknown"} or {kind: "user", issuer, subject}`;
    previous = seq;
  }
  if (nextSeq <= previous) return `nextSeq ${nextSeq} is not above the last seq ${previous}`;
  return null;
}

function isIdentity(value: unknown): value is AuthIdentity {
  if (!isObject(value)) return false;
  switch (value.kind) {
    case "anonymous":
    case "unknown":
      return sameKeys(value, ["kind"]);
    case "user":
      return sameKeys(value, ["kind", "issuer", "subject"]) && (value.issuer === null || isClaim(value.issuer)) && isClaim(value.subject);
    default:
      return false;
  }
}

/** A claim read from a token: a string no longer than a token may be. */
function isClaim(value: unknown): value is string {
  return typeof value === "string" && value.length <= AUTH_TOKEN_CHARS_MAX;
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
