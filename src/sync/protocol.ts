import * as z from "zod/mini";
import { en as englishMessages } from "zod/locales";
import {
  CairnError,
  ERROR_CODES,
  type ErrorCode,
  ADMIN_KEY_CHARS_MAX,
  AUTH_TOKEN_CHARS_MAX,
  MUTATION_BATCH_ENTRIES_MAX,
  PROTOCOL_NAME_CHARS_MAX,
  SESSION_QUERIES_MAX,
  SESSION_TOPICS_MAX,
  TOPIC_CHARS_MAX,
} from "../base/index.js";
// Browser-safe modules, not model/index.ts: this module is bundled with the client.
import type { Value } from "../model/Value.js";
import { decodeValue, encodeValue } from "../model/ValueJson.js";

/**
 * The sync protocol (DESIGN.md §8): JSON text frames over one WebSocket, each a tagged
 * union member named by `type`. Both directions are validated on arrival with the
 * schemas below, so the server and the client share one definition; encoding and
 * decoding happen only here.
 *
 * The schemas use zod/mini, zod's tree-shakable form of the same validators, because
 * this module is bundled into the browser client: full zod would be most of its size.
 *
 * Values (arguments, results, events) travel in Cairn's lossless JSON encoding
 * (model/ValueJson); this module keeps them as plain JSON and the layers above decode
 * them, so a bad value is reported by the value codec with its path.
 *
 * Versions: `{querySet, ts}`. `querySet` counts the client's ModifyQuerySet messages
 * (each names the version it builds on); `ts` is the timestamp every result of the
 * session reflects. A Transition moves the whole session from `startVersion` to
 * `endVersion`; a client applies it only if `startVersion` equals its version.
 */

const name = z.string().check(z.minLength(1), z.maxLength(PROTOCOL_NAME_CHARS_MAX));
const topic = z.string().check(z.minLength(1), z.maxLength(TOPIC_CHARS_MAX));
/** A non-negative integer; z.int() already bounds it to the safe range (≤ 2^53 - 1). */
const counter = z.int().check(z.minimum(0));
/** A value in Cairn's JSON encoding; checked by model/ValueJson when decoded. */
const json = z.unknown();

export const versionSchema = z.strictObject({ querySet: counter, ts: counter });
export type Version = z.infer<typeof versionSchema>;

export const errorPayloadSchema = z.strictObject({
  code: z.string().check(z.minLength(1)),
  kind: z.string().check(z.minLength(1)),
  message: z.string(),
  details: z.optional(z.record(z.string(), z.unknown())),
  /** An app's deliberate error (APP_ERROR): the data it attached, in Cairn's JSON value encoding. */
  data: z.optional(json),
});
export type ErrorPayload = z.infer<typeof errorPayloadSchema>;

// ---- client → server -------------------------------------------------------------------

const mutationFields = {
  requestId: counter,
  path: name,
  args: json,
  /** With `seq`: the mutation's receipt key, so a re-send is answered from the receipt. */
  clientId: z.optional(name),
  seq: z.optional(counter),
  /**
   * With (clientId, seq): the client has the result of every seq up to this one. The
   * server prunes those receipts and refuses those seqs from then on (the client floor).
   */
  ackedThrough: z.optional(counter),
};
const mutationEntrySchema = z.strictObject(mutationFields);
export type MutationEntry = z.infer<typeof mutationEntrySchema>;

export const clientMessageSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("Connect"),
    sessionId: name,
    clientId: z.optional(name),
    /** Sequence numbers of this client's mutations sent but not answered (verdicts in ConnectAck). */
    held: z.optional(z.array(counter).check(z.maxLength(MUTATION_BATCH_ENTRIES_MAX))),
    /** Every mutation of this client with seq ≤ ackedThrough has been answered. */
    ackedThrough: z.optional(counter),
    /** The newest ts the client has seen; a node behind it waits or says so. */
    maxObservedTs: z.optional(counter),
    /** The client applies QueryDiffs: diffable results come with their rows' order keys and change by diffs (issue 30). */
    diffs: z.optional(z.boolean()),
    /**
     * The client's previous session on this node, if it just lost it: that session's id
     * and the ts of the last Transition it applied. Queries re-added with the result hash
     * they hold, that no commit touched since, are answered QueryUnchanged without a run.
     */
    resume: z.optional(z.strictObject({ sessionId: name, sinceTs: counter })),
  }),
  z.strictObject({
    type: z.literal("ModifyQuerySet"),
    baseVersion: counter,
    newVersion: counter,
    add: z
      .array(z.strictObject({ queryId: counter, path: name, args: json, resultHash: z.optional(z.string().check(z.maxLength(128))) }))
      .check(z.maxLength(SESSION_QUERIES_MAX)),
    remove: z.array(counter).check(z.maxLength(SESSION_QUERIES_MAX)),
  }),
  /** The client's diff-applied result of the query did not match its checksum: send it whole again. */
  z.strictObject({ type: z.literal("ResetQuery"), queryId: counter }),
  z.strictObject({ type: z.literal("Mutation"), ...mutationFields }),
  z.strictObject({
    type: z.literal("MutationBatch"),
    entries: z.array(mutationEntrySchema).check(z.minLength(1), z.maxLength(MUTATION_BATCH_ENTRIES_MAX)),
  }),
  z.strictObject({ type: z.literal("Action"), requestId: counter, path: name, args: json }),
  z.strictObject({ type: z.literal("SetAuth"), token: z.nullable(z.string().check(z.minLength(1), z.maxLength(AUTH_TOKEN_CHARS_MAX))) }),
  z.strictObject({ type: z.literal("Publish"), topic, event: json }),
  /** Makes the session an admin's (internal and system functions, logs) with the deployment's admin key; null: no longer. */
  z.strictObject({ type: z.literal("AdminAuth"), key: z.nullable(z.string().check(z.minLength(1), z.maxLength(ADMIN_KEY_CHARS_MAX))) }),
  /** Admin sessions: the node's function logs, the newest at once and then as they come (LogEntries). */
  z.strictObject({ type: z.literal("SubscribeLogs") }),
  z.strictObject({ type: z.literal("UnsubscribeLogs") }),
  z.strictObject({
    type: z.literal("ModifyTopics"),
    add: z.array(topic).check(z.maxLength(SESSION_TOPICS_MAX)),
    remove: z.array(topic).check(z.maxLength(SESSION_TOPICS_MAX)),
  }),
]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

// ---- server → client -------------------------------------------------------------------

/** An order key (orderedKeyText): base64 in ASCII order, so strings compare as the keys do. */
const orderKey = z.string().check(z.maxLength(16_384));

/** A diffable result's rows, sent with its QueryUpdated to a session that takes diffs: what later QueryDiffs are keyed by. */
export const diffableRowsSchema = z.strictObject({
  shape: z.enum(["array", "page", "document"]),
  order: z.enum(["asc", "desc"]),
  /** The order key of each row, in the result's order (for "page", of `page`'s rows; for "document", one). */
  keys: z.array(orderKey),
});
export type DiffableRows = z.infer<typeof diffableRowsSchema>;

export const rowChangeSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("add"), key: orderKey, value: json }),
  z.strictObject({ op: z.literal("edit"), key: orderKey, value: json }),
  z.strictObject({ op: z.literal("remove"), key: orderKey }),
]);
export type RowChangeMessage = z.infer<typeof rowChangeSchema>;

export const queryModificationSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("QueryUpdated"), queryId: counter, value: json, hash: z.string(), rows: z.optional(diffableRowsSchema) }),
  /**
   * A diffable result changed by `changes` (removals, edits and additions of rows by
   * order key; a page's new envelope): applied to the result held, it must add up to
   * `checksum` (resultChecksum.ts), which is the result's new hash; if it does not, the
   * client asks for the result whole (ResetQuery).
   */
  z.strictObject({
    type: z.literal("QueryDiff"),
    queryId: counter,
    changes: z.array(rowChangeSchema),
    page: z.optional(z.strictObject({ isDone: z.boolean(), continueCursor: z.string() })),
    checksum: z.string(),
  }),
  z.strictObject({ type: z.literal("QueryFailed"), queryId: counter, error: errorPayloadSchema, hash: z.string() }),
  z.strictObject({ type: z.literal("QueryRemoved"), queryId: counter }),
  z.strictObject({ type: z.literal("QueryUnchanged"), queryId: counter, hash: z.string() }),
]);
export type QueryModification = z.infer<typeof queryModificationSchema>;

export const serverMessageSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("ConnectAck"),
    deploymentId: z.string(),
    sessionId: z.string(),
    /** Held mutations whose receipt exists: they committed, with these results. */
    known: z.array(counter),
    results: z.array(z.strictObject({ seq: counter, value: json, ts: counter })),
    /** The node's current timestamp. */
    ts: counter,
  }),
  z.strictObject({
    type: z.literal("Transition"),
    startVersion: versionSchema,
    endVersion: versionSchema,
    modifications: z.array(queryModificationSchema),
  }),
  z.discriminatedUnion("success", [
    z.strictObject({
      type: z.literal("MutationResponse"),
      requestId: counter,
      success: z.literal(true),
      value: json,
      ts: counter,
      replayed: z.optional(z.boolean()),
    }),
    z.strictObject({
      type: z.literal("MutationResponse"),
      requestId: counter,
      success: z.literal(false),
      error: errorPayloadSchema,
      ts: z.optional(counter),
    }),
  ]),
  z.discriminatedUnion("success", [
    z.strictObject({ type: z.literal("ActionResponse"), requestId: counter, success: z.literal(true), value: json }),
    z.strictObject({ type: z.literal("ActionResponse"), requestId: counter, success: z.literal(false), error: errorPayloadSchema }),
  ]),
  z.strictObject({
    type: z.literal("AuthResponse"),
    success: z.boolean(),
    /** The verified identity's subject (null: anonymous). */
    subject: z.nullable(z.string()),
    error: z.optional(errorPayloadSchema),
  }),
  /** The session's token expired: it is anonymous now (not an answer to any SetAuth). */
  z.strictObject({ type: z.literal("AuthExpired"), error: errorPayloadSchema }),
  z.strictObject({ type: z.literal("Broadcast"), topic, event: json }),
  /** The answer to AdminAuth (in order); a refusal changes nothing of the session. */
  z.strictObject({ type: z.literal("AdminAuthResponse"), success: z.boolean(), error: z.optional(errorPayloadSchema) }),
  /** Function log entries (docs/admin-api.md); `dropped`: entries this session missed by falling behind, so far. */
  z.strictObject({ type: z.literal("LogEntries"), entries: z.array(z.unknown()), dropped: counter }),
  /** A frame the server could not accept; the session goes on. */
  z.strictObject({ type: z.literal("ProtocolError"), error: errorPayloadSchema, requestId: z.optional(counter) }),
  /** The session ends; the socket closes after this frame. */
  z.strictObject({ type: z.literal("FatalError"), error: errorPayloadSchema }),
]);
export type ServerMessage = z.infer<typeof serverMessageSchema>;

/** One function call as it ended, as the admin API and LogEntries frames carry it (docs/admin-api.md). */
export interface LogEntry {
  readonly id: number;
  /** Milliseconds since the Unix epoch. */
  readonly time: number;
  readonly requestId: string;
  readonly path: string;
  readonly kind: "query" | "mutation" | "action";
  readonly level: "info" | "warn" | "error";
  readonly outcome: "ok" | "error";
  readonly durationMs: number;
  readonly error?: { readonly code: string; readonly message: string; readonly stack?: string };
  readonly lines: readonly { readonly level: "log" | "info" | "warn" | "error" | "debug"; readonly text: string; readonly time: number }[];
  readonly truncatedLines?: number;
}
export type TransitionMessage = Extract<ServerMessage, { type: "Transition" }>;
export type MutationResponseMessage = Extract<ServerMessage, { type: "MutationResponse" }>;
export type ActionResponseMessage = Extract<ServerMessage, { type: "ActionResponse" }>;

/** WebSocket close codes the server uses (4000–4999 are the application's). */
export const CLOSE_CODES = {
  /** The server is stopping: reconnect with backoff. */
  goingAway: 1001,
  /** The first frame was not Connect, or a FatalError was sent. */
  protocolError: 4400,
  /** The session overflowed its response budget or stayed over its limits. */
  overloaded: 4429,
  /** Two pings went unanswered. */
  unresponsive: 4408,
  /** The server failed to handle the session (a bug, logged on the server): reconnect. */
  internalError: 1011,
  /** A replica is behind the state the client has already seen (REPLICA_BEHIND): reconnect with backoff. */
  behind: 4503,
} as const;

// ---- encoding --------------------------------------------------------------------------

/** Parses a client frame; PROTOCOL_INVALID naming what is wrong. */
export function parseClientMessage(text: string): ClientMessage {
  return parseWith(clientMessageSchema, text, "client");
}

/** Parses a server frame; PROTOCOL_INVALID naming what is wrong. */
export function parseServerMessage(text: string): ServerMessage {
  return parseWith(serverMessageSchema, text, "server");
}

export function encodeMessage(message: ClientMessage | ServerMessage): string {
  return JSON.stringify(message);
}

/**
 * zod's English messages, passed to each parse rather than set with `z.config`: zod/mini
 * ships without a locale ("Invalid input" for every issue), and zod's config is one
 * object on globalThis shared by every copy of zod on a page, so setting it would change
 * the messages of an app's own schemas — and an app's locale must not change ours (a
 * parse's own map outranks the global one).
 */
const ISSUE_MESSAGES = englishMessages().localeError;

function parseWith<T>(schema: z.ZodMiniType<T>, text: string, side: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CairnError("PROTOCOL_INVALID", `a ${side} frame must be JSON text`);
  }
  const parsed = schema.safeParse(raw, { error: ISSUE_MESSAGES });
  if (!parsed.success) {
    const type = typeof raw === "object" && raw !== null ? (raw as { type?: unknown }).type : undefined;
    throw new CairnError("PROTOCOL_INVALID", `invalid ${typeof type === "string" ? type : side} frame: ${z.prettifyError(parsed.error)}`, {
      details: typeof type === "string" ? { frame: type } : {},
    });
  }
  return parsed.data;
}

/** The message every Internal error carries on the wire: its real message (a bug's) stays in the server's log. */
export const INTERNAL_ERROR_MESSAGE = "internal error (details are in the server's log)";

/**
 * The wire form of an error: code, kind and message (and details a client may use, and
 * an app error's data). An error of kind Internal — a bug, or anything that is not a
 * CairnError — keeps its message on the server (callers log it: see `isInternalError`):
 * it may hold paths, keys or stack text a client must not see (SAFE_INTERNAL_CODES
 * excepted).
 */
export function errorPayload(error: unknown): ErrorPayload {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === "string" && code in ERROR_CODES) {
    const cairn = error as CairnError;
    const kind = ERROR_CODES[code as ErrorCode];
    const details = publicDetails(cairn.details);
    return {
      code,
      kind,
      message: kind === "Internal" && !SAFE_INTERNAL_CODES.has(code) ? INTERNAL_ERROR_MESSAGE : String(cairn.message),
      ...(details !== undefined ? { details } : {}),
      ...wireData(cairn.data),
    };
  }
  return { code: "INTERNAL", kind: "Internal", message: INTERNAL_ERROR_MESSAGE };
}

/**
 * Internal errors whose message travels: FUNCTION_FAILED, a function's bug, whose message
 * the functions runtime builds to name only the function and a request id (it logged the
 * stack under that id itself).
 */
const SAFE_INTERNAL_CODES: ReadonlySet<string> = new Set(["FUNCTION_FAILED"]);

/** Whether `errorPayload` hides this error's message: the server must log it instead. */
export function isInternalError(error: unknown): boolean {
  return errorPayload(error).message === INTERNAL_ERROR_MESSAGE;
}

/** Rebuilds a CairnError from its wire form (an unknown code becomes INTERNAL, keeping the message). */
export function errorFromPayload(payload: ErrorPayload): CairnError {
  const code = (payload.code in ERROR_CODES ? payload.code : "INTERNAL") as ErrorCode;
  return new CairnError(code, payload.message, {
    ...(payload.details ? { details: payload.details } : {}),
    ...dataOfWire(payload.data),
  });
}

/** An app error's data in the value encoding; data that is not a value stays on the server (the runtime checks it first). */
function wireData(data: unknown): { data?: unknown } {
  if (data === undefined) return {};
  try {
    return { data: encodeValue(data as Value) };
  } catch {
    return {};
  }
}

/** The data of an error off the wire, decoded; data that does not decode is left out (the code and message still tell). */
function dataOfWire(data: unknown): { data?: Value } {
  if (data === undefined) return {};
  try {
    return { data: decodeValue(data) };
  } catch {
    return {};
  }
}

/** Details that are plain JSON travel (paths, limits); anything else stays on the server. */
function publicDetails(details: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> | undefined {
  if (details === undefined) return undefined;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (value === null || ["string", "number", "boolean"].includes(typeof value)) kept[key] = value;
    else if (Array.isArray(value) && value.every((item) => typeof item === "string" || typeof item === "number")) kept[key] = value;
  }
  return Object.keys(kept).length > 0 ? kept : undefined;
}
