/**
 * A node's id: it names a shard's writer in manifests and segment headers, a node's
 * registry entry (`nodes/{nodeId}`) and a consumer's watermark in the bucket, and a peer
 * announcing itself. It becomes part of object keys and log lines, so it is short and
 * plain. Every boundary that takes one (the `--node-id` flag, the node-id file, the
 * internal peer endpoint, the engine's options, the registry, watermarks) checks it
 * against this one pattern.
 */
export const NODE_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/** NODE_ID_PATTERN in words, for error messages. */
export const NODE_ID_FORM = "1–128 letters, digits, '.', '_' or '-'";

export function isNodeId(value: unknown): value is string {
  return typeof value === "string" && NODE_ID_PATTERN.test(value);
}
