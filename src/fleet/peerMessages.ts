import { z } from "zod";
import { PROTOCOL_NAME_CHARS_MAX } from "../base/index.js";
import { NODE_ID_PATTERN } from "../model/index.js";
import type { WakeHint } from "../replica/index.js";

/**
 * Every message one node sends another (DESIGN.md §9), in one place: where it goes, its
 * schema, and its type. All of them are `POST`s with the deployment's admin key
 * (`Authorization: Admin <key>`), JSON in both directions; the receiving node (HttpApi)
 * parses each with the schema here, the sending one (PeerClient) builds it from the type
 * here, so the two ends cannot drift apart.
 *
 * - **Wake hints** (`api/internal/hint`): a writer tells a follower that a shard's log
 *   grew, so that it GETs the segment at once instead of at its next poll.
 * - **Announcements** (`api/internal/peer`): a node tells a writer that it follows its
 *   shards (hints and frontier ticks start at once, not at the next registry listing).
 * - **Forwarded calls** (`api/internal/forward/{mutation,action}`): a node that does not
 *   write a shard hands a client's write to the node that does, with the identity it
 *   verified and the client's receipt key.
 * - **Probes** (`GET api/health`, the public health check): whether a peer's advertised
 *   URL reaches it at all.
 */
export const PEER_ROUTES = {
  hint: "api/internal/hint",
  announce: "api/internal/peer",
  forward: (kind: ForwardedKind) => `api/internal/forward/${kind}`,
  /** A GET (no key) that any node answers: a peer probes whether an advertised URL reaches it. */
  health: "api/health",
} as const;

export type ForwardedKind = "mutation" | "action";

/** Hints per request: a writer sends at most one per shard, and shards are fewer than this. */
const HINTS_PER_MESSAGE_MAX = 1_024;
/** The shard numbers a message may name (a deployment has far fewer). */
const SHARD_NUMBER_MAX = 65_535;
const URL_CHARS_MAX = 2_048;

const seqSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const wakeHintsSchema = z.strictObject({
  hints: z
    .array(
      z.strictObject({
        shard: z.number().int().min(0).max(SHARD_NUMBER_MAX),
        seqno: seqSchema,
        hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
        verifying: z.literal(true).optional(),
      }),
    )
    .max(HINTS_PER_MESSAGE_MAX),
}) satisfies z.ZodType<{ hints: WakeHint[] }>;

export type WakeHintsMessage = { readonly hints: readonly WakeHint[] };

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
});

export interface ForwardedCall {
  readonly path: string;
  /** Arguments in Cairn's JSON value encoding. */
  readonly args: unknown;
  readonly identity: { readonly subject: string; readonly issuer?: string } | null;
  readonly clientId?: string;
  readonly seq?: number;
  readonly ackedThrough?: number;
}

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
