import type { EndpointAddress } from "../kit/RemoteEndpoint.js";

/** What phase 5 asks its set-up child (argv[2], JSON) and what it answers (one stdout line). */
export interface PreloadRequest {
  readonly address: EndpointAddress;
  readonly prefix: string;
  /** The benchmark's temp directory: the child leaves the built file there for the measured writer. */
  readonly directory: string;
  readonly writerName: string;
  readonly documents: number;
  readonly unitDocuments: number;
  /** Where the child writes the ids it committed, one a line. */
  readonly idsPath: string;
}

export interface PreloadResult {
  readonly type: "result";
  readonly localPath: string;
  readonly snapshot: { readonly seqno: number; readonly parts: number; readonly bytes: number };
  readonly buildSeconds: number;
  readonly snapshotSeconds: number;
}
