import { z } from "zod";
import { CairnError } from "../base/index.js";

/**
 * How a fleet node beats (DESIGN.md §9 "Fleet"). Each beat is one presence PUT (a CAS of
 * `nodes/{nodeId}`), one LIST of `nodes/` plus a GET per live node, and a manifest GET per
 * shard this node does not write. At the defaults (a 2 s beat), a node of a 6-shard fleet
 * of 3 makes ~1,800 PUTs, 1,800 LISTs and ~14,000 GETs an hour: about $0.024 an hour at
 * S3 Standard ($0.005 per 1,000 PUT/LIST, $0.0004 per 1,000 GET), $17 a month — the
 * price of failing over in seconds; a 10 s beat costs a fifth of it and moves ownership
 * five times slower.
 */
export interface FleetTuning {
  /** How often presence is renewed and the live set read. */
  readonly beatMs: number;
  /**
   * How long a node's presence entry counts as live after its last renewal. Longer than
   * two beats, so one slow PUT does not drop a node out of the live set (a change of the
   * live set moves shards); at most the lease TTL, so a dead node leaves the live set no
   * later than its leases lapse (its shards are then assigned to live nodes).
   */
  readonly presenceTtlMs: number;
}

export const FLEET_TUNING_DEFAULTS: FleetTuning = { beatMs: 2_000, presenceTtlMs: 6_000 };

/** Longest beat: an hour (a fleet that beats less often than that does not fail over). */
const BEAT_MS_MAX = 60 * 60 * 1000;

const fleetTuningSchema = z.strictObject({
  beatMs: z.number().int().min(50).max(BEAT_MS_MAX),
  presenceTtlMs: z.number().int().min(100).max(BEAT_MS_MAX * 3),
});

/**
 * The defaults with `overrides` applied, checked on their own and against the shards'
 * lease (`leaseTtlMs`, `heartbeatIntervalMs`) and the clock skew takeovers tolerate:
 * INVALID_ARGUMENT naming every rule broken and how to fix it.
 */
export function resolveFleetTuning(overrides: unknown, lease: { readonly leaseTtlMs: number; readonly heartbeatIntervalMs: number }, maxClockSkewMs: number): FleetTuning {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) throw new CairnError("INVALID_ARGUMENT", "fleet tuning must be an object of options");
  const parsed = fleetTuningSchema.safeParse({ ...FLEET_TUNING_DEFAULTS, ...overrides });
  if (!parsed.success) throw new CairnError("INVALID_ARGUMENT", `invalid fleet tuning: ${z.prettifyError(parsed.error)}`);
  const tuning = parsed.data;
  const problems: string[] = [];
  if (tuning.presenceTtlMs < 2 * tuning.beatMs) {
    problems.push(`presenceTtlMs (${tuning.presenceTtlMs}) must be at least two beats (2 × beatMs = ${2 * tuning.beatMs}): one late renewal would drop a live node and move its shards`);
  }
  if (tuning.presenceTtlMs > lease.leaseTtlMs) {
    problems.push(`presenceTtlMs (${tuning.presenceTtlMs}) must not exceed the lease (leaseTtlMs ${lease.leaseTtlMs}): a dead node would stay the target of its shards after their leases lapsed`);
  }
  if (lease.heartbeatIntervalMs >= lease.leaseTtlMs) problems.push(`heartbeatIntervalMs (${lease.heartbeatIntervalMs}) must be below leaseTtlMs (${lease.leaseTtlMs})`);
  if (maxClockSkewMs >= lease.leaseTtlMs) problems.push(`the clock skew bound (${maxClockSkewMs} ms) must be below leaseTtlMs (${lease.leaseTtlMs})`);
  if (problems.length > 0) throw new CairnError("INVALID_ARGUMENT", `invalid fleet configuration: ${problems.join("; ")}`, { details: { problems } });
  return tuning;
}
