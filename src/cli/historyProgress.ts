/**
 * One progress line of `cairn restore` or `cairn export` for a person (null: a step not
 * worth a line), from the progress a history task posts.
 */
export function describeHistoryProgress(step: { readonly phase: string } & Record<string, unknown>): string | null {
  const at = (ts: unknown) => new Date(Math.floor(Number(ts) / 1000)).toISOString();
  const shard = `shard ${String(step["shard"])}/${String(step["shards"])}`;
  switch (step.phase) {
    case "cleanup":
      return step["generation"] === undefined ? `removing what an interrupted run left: ${String(step["objectsDeleted"])} object(s)` : null;
    case "restore":
      return `${shard}: snapshot ${String(step["seqno"])}: part ${String(step["partsDone"])}/${String(step["parts"])}`;
    case "replay":
      return `${shard}: replaying segment ${String(step["seqno"])} (${at(step["ts"])} of ${at(step["atTs"])})`;
    case "write":
      return `${shard}: writing ${String(step["documents"])} document(s), ${String(step["parts"])} part(s) (${(Number(step["bytes"]) / 2 ** 20).toFixed(1)} MiB)`;
    case "written":
      return `${shard}: written, ${String(step["documents"])} document(s)`;
    case "export":
      return `${shard}: ${String(step["documents"])} document(s) exported`;
    default:
      return null;
  }
}
