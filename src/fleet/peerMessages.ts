import { z } from "zod";
import { HINT_SEGMENT_BYTES_MAX, PROTOCOL_NAME_CHARS_MAX } from "../base/index.js";
import { NODE_ID_PATTERN } from "../model/index.js";
import type { WakeHint } from "../replica/index.js";

/**
 * Every message one node sends another (DESIGN.md §9), in one place: where it goes, its
 * schema, and its type. Each is an HTTP `POST` with the deployment's admin key
 * (`Authorization: Admin <key>`), JSON in both directions; the receiving node (HttpApi)
 * parses each with the schema here, the sending one (PeerClient) builds it from the type
 * here, so the two ends cannot drift apart. Hints and forwarded mutations usually travel
 * instead as frames on the sender's **peer socket** to the receiver (one WebSocket per
 * ordered pair of nodes, `api/internal/peer-socket`, opened with the admin key): a frame
 * costs a fraction of an HTTP request at both ends. A node whose peer refuses the upgrade
 * (or whatever sits between them does) sends over HTTP instead.
 *
 * - **Wake hints** (`api/internal/hint`; on the peer socket a frame `{hints}`, not
 *   answered): a writer tells a follower that a shard's log grew, so that it GETs the
 *   segment at once instead of at its next poll; a verified segment small enough travels
 *   along (base64), and the follower does not GET it at all.
 * - **Announcements** (`api/internal/peer`): a node tells a writer that it follows its
 *   shards (hints and frontier ticks start at once, not at the next registry listing).
 * - **Forwarded calls** (`api/internal/forward/{mutation,action}`): a node that does not
 *   write a shard hands a client's write to the node that does, with the identity it
 *   verified and the client's receipt key. On the peer socket a mutation is a frame
 *   `{id, call}`, answered by `{id, status, body}` — the status and body the HTTP route
 *   would have answered — in whatever order they finish.
 * - **Probes** (`GET api/health`, the public health check): whether a peer's advertised
 *   URL reaches it at all.
 */
export const PEER_ROUTES = {
  hint: "api/internal/hint",
  announce: "api/internal/peer",
  forward: (kind: ForwardedKind) => `api/internal/forward/${kind}`,
  /** The WebSocket (upgrade, admin key) that carries forwarded mutations (ForwardFrame out, ForwardAnswerFrame back) and hints (a WakeHintsMessage frame). */
  peerSocket: "api/internal/peer-socket",
  /** A GET (no key) that any node answers: a peer probes whether an advertised URL reaches it. */
  health: "api/health",
} as const;

export type ForwardedKind = "mutation" | "action";

/** Hints per request: a writer sends what waited for the follower (WakeHintSender), at most this many at once. */
export const HINTS_PER_MESSAGE_MAX = 1_024;
/** The shard numbers a message may name (a deployment has far fewer). */
const SHARD_NUMBER_MAX = 65_535;
const URL_CHARS_MAX = 2_048;

const seqSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A segment's bytes in base64, at most HINT_SEGMENT_BYTES_MAX of them. */
const SEGMENT_BASE64_CHARS_MAX = 4 * Math.ceil(HINT_SEGMENT_BYTES_MAX / 3);

/**
 * Hints as they travel: a segment's bytes in base64 (decoded here, so a receiver sees
 * WakeHints), and only with the hash it must have (a segment without one is not vouched).
 */
export const wakeHintsSchema = z.strictObject({
  hints: z
    .array(
      z
        .strictObject({
          shard: z.number().int().min(0).max(SHARD_NUMBER_MAX),
          seqno: seqSchema,
          hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
          segment: z.base64().max(SEGMENT_BASE64_CHARS_MAX).optional(),
          verifying: z.literal(true).optional(),
        })
        .refine((hint) => hint.segment === undefined || hint.hash !== undefined, { message: "a hint's segment bytes need the hash they vouch for" })
        .transform(({ segment, ...hint }): WakeHint => (segment === undefined ? hint : { ...hint, segment: Buffer.from(segment, "base64") })),
    )
    .max(HINTS_PER_MESSAGE_MAX),
}) satisfies z.ZodType<{ hints: WakeHint[] }, unknown>;

export type WakeHintsMessage = { readonly hints: readonly WakeHint[] };

/** A hints message as JSON goes on the wire (segment bytes in base64): what wakeHintsSchema parses. */
export function wakeHintsBody(message: WakeHintsMessage): unknown {
  return { hints: message.hints.map(({ segment, ...hint }) => (segment === undefined ? hint : { ...hint, segment: Buffer.from(segment.buffer, segment.byteOffset, segment.byteLength).toString("base64") })) };
}

export const announcementSchema = z.strictObject({
  nodeId: z.string().regex(NODE_ID_PATTERN),
  url: z.url({ protocol: /^https?$/ }).max(URL_CHARS_MAX),
});

export type Announcement = z.infer<typeof announcementSchema>;

/**
 * A function call as a node receives it over HTTP: the public API's body (HttpApi adds
 * `minTs` for queries) and, forwarded, the caller's identity. Args are in Cairn's JSON value
 * encoding; `(clientId, seq)` is the receipt key that makes a re-sent mutation run once.
 */
export const functionCallFields = {
  path: z.string().min(1).max(PROTOCOL_NAME_CHARS_MAX),
  args: z.unknown().optional(),
  clientId: z.string().min(1).max(PROTOCOL_NAME_CHARS_MAX).optional(),
  seq: seqSchema.optional(),
  /** With (clientId, seq): every seq of the client up to this one is answered (receipts pruned, seqs refused from then on). */
  ackedThrough: seqSchema.optional(),
};

export const forwardedCallSchema = z.strictObject({
  ...functionCallFields,
  /** The caller's identity as the forwarding node verified it (null: anonymous). */
  identity: z.looseObject({ subject: z.string().min(1), issuer: z.string().optional() }).nullable(),
  /** An admin's call (internal and system functions allowed): only admins' calls are forwarded with it, and peers hold the admin key. */
  internal: z.boolean().optional(),
});

export interface ForwardedCall {
  readonly path: string;
  /** Arguments in Cairn's JSON value encoding. */
  readonly args: unknown;
  readonly identity: { readonly subject: string; readonly issuer?: string } | null;
  readonly internal?: boolean;
  readonly clientId?: string;
  readonly seq?: number;
  readonly ackedThrough?: number;
}

/**
 * Calls one peer socket may have waiting for answers at once: a sender holds more back
 * (they fail as never sent), a writer answers more with SESSION_OVERLOADED (not run).
 */
export const PEER_SOCKET_CALLS_MAX = 10_000;

/** A forwarded mutation on the peer socket: `id` is the sender's, echoed in the answer. The call is parsed apart, so a bad one is answered, not fatal. */
export const forwardFrameSchema = z.strictObject({ id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), call: z.unknown() });

export type ForwardFrame = { readonly id: number; readonly call: ForwardedCall };

/** The writer's answer on the peer socket: what the HTTP route would have answered (status and JSON body). */
export const forwardAnswerFrameSchema = z.strictObject({ id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), status: z.number().int().min(100).max(599), body: z.unknown() });

export type ForwardAnswerFrame = { readonly id: number; readonly status: number; readonly body: unknown };

/** A forwarded call's answer at the writer: the value encoded, and the commit ts of a mutation. */
export interface ForwardedAnswer {
  readonly value: unknown;
  readonly ts?: number;
  readonly replayed?: boolean;
}

/** Whether `url` names a node's base URL the way announcements and the registry carry it ("/" at the end). */
export function asBaseUrl(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}
