import type { Clock } from "../base/index.js";
import type { NodeEntry } from "./NodeRegistry.js";
import type { PeerClient } from "./PeerClient.js";

export interface PeerChecksOptions {
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** Probes a peer's URL (null: no peer client, nothing is probed). */
  readonly peers: PeerClient | null;
  /** The clock skew the leases tolerate. */
  readonly maxClockSkewMs: number;
  /** How often a node's entry is renewed: an entry read here may be up to this old. */
  readonly beatMs: number;
}

/** A peer that could not be reached is probed again after this long. */
const UNREACHABLE_REPROBE_MS = 30_000;
/** Slack for the time an entry spends between its writer's clock and this node's read (request latency, a slow beat). */
const ENTRY_AGE_SLACK_MS = 2_000;

/**
 * Misconfigurations a fleet node can see in its peers' presence entries and says so in
 * its log (once per peer and problem, and again when it is fixed):
 * - **An unreachable URL**: a node advertises a URL this node cannot reach (a container's
 *   internal address, a wrong port). Writes this node forwards to the shards that node
 *   writes would fail, so the URL is probed (`GET api/health`) when first seen or changed.
 * - **A skewed clock**: a peer's entry was stamped further in the future — or, older than
 *   a beat allows, further in the past — than the clock skew the leases tolerate. Leases
 *   stay safe (every acquire moves the epoch), but failover timing and the live set are
 *   judged wrong, so the operator should fix the clock or raise --max-clock-skew-ms.
 */
export class PeerChecks {
  private readonly reachable = new Map<string, { readonly url: string; ok: boolean; checkedAtMs: number }>();
  private readonly skewed = new Set<string>();
  private probing = false;

  constructor(private readonly options: PeerChecksOptions) {}

  /** One beat's live entries (this node's own excluded). */
  check(others: readonly NodeEntry[]): void {
    const nowMs = this.options.clock.nowMs();
    for (const entry of others) this.checkClock(entry, nowMs);
    void this.probeUrls(others);
  }

  private checkClock(entry: NodeEntry, nowMs: number): void {
    const { maxClockSkewMs, beatMs } = this.options;
    const aheadMs = entry.updatedAt - nowMs;
    const behindMs = nowMs - entry.updatedAt - beatMs - ENTRY_AGE_SLACK_MS;
    const skewMs = aheadMs > maxClockSkewMs ? aheadMs : behindMs > maxClockSkewMs ? -behindMs : null;
    if (skewMs === null) {
      if (this.skewed.delete(entry.nodeId)) this.options.log(`node ${entry.nodeId}: its clock agrees with this node's again`);
      return;
    }
    if (this.skewed.has(entry.nodeId)) return;
    this.skewed.add(entry.nodeId);
    this.options.log(
      `warning: node ${entry.nodeId}: its clock looks ${Math.abs(skewMs)} ms ${skewMs > 0 ? "ahead of" : "behind"} this node's, more than the ${maxClockSkewMs} ms ` +
        `the leases tolerate (--max-clock-skew-ms): leases stay safe, but takeovers and the live set are judged wrongly; fix the clocks (NTP) or raise the bound`,
    );
  }

  private async probeUrls(others: readonly NodeEntry[]): Promise<void> {
    const peers = this.options.peers;
    if (peers === null || this.probing) return;
    this.probing = true;
    try {
      const nowMs = this.options.clock.monotonicMs();
      for (const entry of others) {
        if (entry.url === null) continue;
        const known = this.reachable.get(entry.nodeId);
        if (known !== undefined && known.url === entry.url && (known.ok || nowMs - known.checkedAtMs < UNREACHABLE_REPROBE_MS)) continue;
        const problem = await peers.probe(entry.url);
        const ok = problem === null;
        if (!ok && (known === undefined || known.ok || known.url !== entry.url)) {
          this.options.log(
            `warning: node ${entry.nodeId} advertises ${entry.url}, which this node cannot reach (${problem}): writes forwarded to the shards it writes will fail; ` +
              `start it with --advertise-url set to an address its peers reach`,
          );
        } else if (ok && known !== undefined && !known.ok) {
          this.options.log(`node ${entry.nodeId}: reachable again at ${entry.url}`);
        }
        this.reachable.set(entry.nodeId, { url: entry.url, ok, checkedAtMs: nowMs });
      }
    } finally {
      this.probing = false;
    }
  }
}
