import type { OperationCounters, S3Operation } from "../../test/support/s3-endpoint/index.js";
import type { LatencyRule } from "./latencyModels.js";

/**
 * The JSON lines between the benchmark and its S3 test endpoint child: the child
 * announces where it listens, then answers each command with one reply, in order.
 */
export interface EndpointReady {
  readonly type: "ready";
  readonly url: string;
  readonly region: string;
  readonly bucket: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export type EndpointCommand =
  /** Replaces the endpoint's fault rules with these (the selected latency model). */
  | { readonly command: "latency"; readonly rules: readonly LatencyRule[] }
  | { readonly command: "no-latency" }
  | { readonly command: "reset-counters" }
  | { readonly command: "counters" }
  | { readonly command: "close" };

export type EndpointCounters = Readonly<Record<S3Operation, OperationCounters>>;

export type EndpointReply =
  | { readonly ok: true; readonly counters?: EndpointCounters }
  | { readonly ok: false; readonly error: string };
