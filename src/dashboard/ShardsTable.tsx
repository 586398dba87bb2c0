import type { ShardInfo } from "./adminTypes.js";
import { clockTime, count, duration, relative } from "./format.js";

/** A follower this far behind its writer is shown as lagging. */
export const LAG_WARNING_MS = 2_000;

/** Each shard as this node holds it: writer and lease, log extent, applied seqno and frontier, followers with their lag, snapshots and GC. */
export function ShardsTable({ shards, now }: { readonly shards: readonly ShardInfo[]; readonly now: number }) {
  return (
    <>
      <h2>Shards</h2>
      <div class="scroll">
        <table class="grid compact" data-testid="shards">
          <thead>
            <tr>
              <th class="number">Shard</th>
              <th>Role here</th>
              <th>Writer</th>
              <th class="number">Epoch</th>
              <th>Lease expires</th>
              <th class="number">Applied</th>
              <th class="number">Log</th>
              <th class="number">Frontier ts</th>
              <th>Staleness</th>
              <th>Followers (lag)</th>
              <th>Snapshot</th>
              <th>Last GC</th>
            </tr>
          </thead>
          <tbody>
            {shards.map((shard) => (
              <tr key={shard.shard} class={shard.lastError !== null ? "failing" : undefined}>
                <td class="number">{shard.shard}</td>
                <td>{shard.role}</td>
                <td>
                  {shard.writer === null ? <span class="muted">none</span> : <code>{shard.writer}</code>}
                  {!shard.writerLive && <span class="badge warn">not live</span>}
                </td>
                <td class="number">{shard.epoch}</td>
                <td>{relative(shard.leaseExpiresAt, now)}</td>
                <td class="number">{count(shard.appliedSeqno)}</td>
                <td class="number" title="first seqno kept … next seqno">
                  {count(shard.logStart)}…{count(shard.nextSeqno)}
                </td>
                <td class="number">{shard.frontierTs}</td>
                <td class={(shard.stalenessMs ?? 0) >= LAG_WARNING_MS ? "warn" : undefined} data-testid={`staleness-${shard.shard}`}>
                  {shard.stalenessMs === null ? "—" : duration(shard.stalenessMs)}
                </td>
                <td class="wrap">
                  {(shard.followers ?? []).length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    (shard.followers ?? []).map((follower) => (
                      <div key={follower.consumerId} title={`applied ${follower.appliedSeqno}, reported ${clockTime(follower.updatedAt)}`}>
                        <code>{follower.consumerId}</code> {follower.lagSegments} behind
                      </div>
                    ))
                  )}
                </td>
                <td>
                  {shard.snapshot === null ? <span class="muted">none</span> : `seqno ${shard.snapshot.seqno}`}
                  {shard.lastSnapshot !== null && <div class="muted small">made {relative(shard.lastSnapshot.time, now)}</div>}
                </td>
                <td class="wrap">
                  {shard.lastGc === null ? (
                    <span class="muted">not yet</span>
                  ) : (
                    <>
                      {relative(shard.lastGc.time, now)}: {shard.lastGc.segmentsDeleted} deleted, log starts at {shard.lastGc.logStartAfter}
                      {shard.lastGc.heldBackBy !== null && shard.lastGc.heldBackBy !== undefined && (
                        <div class="muted small">held back by {typeof shard.lastGc.heldBackBy === "string" ? shard.lastGc.heldBackBy : JSON.stringify(shard.lastGc.heldBackBy)}</div>
                      )}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {shards.some((shard) => shard.lastError !== null) && (
        <ul class="errors">
          {shards
            .filter((shard) => shard.lastError !== null)
            .map((shard) => (
              <li key={shard.shard} class="error">
                shard {shard.shard}: {shard.lastError}
              </li>
            ))}
        </ul>
      )}
    </>
  );
}
