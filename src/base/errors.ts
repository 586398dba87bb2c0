/**
 * Cairn's errors: a few public kinds, each telling the caller what to do, and many
 * precise codes that map onto them through one table.
 *
 * Errors are recognised structurally (`error.code`, `error.kind`), never by
 * `instanceof`: two copies of this module (a bundled client, a worker) must agree.
 */

/** What the caller should do, per public kind. */
export const ERROR_KINDS = {
  /** Lost a race (CAS, OCC). Re-read the current state and decide again. */
  Conflict: "re-read and retry the decision",
  /** Another writer owns the shard now. Stop writing; re-open to become a writer again. */
  Fenced: "stop writing; re-acquire before writing again",
  /** The store or a peer did not answer usefully. Retry later with backoff. */
  Unavailable: "retry later with backoff",
  /** The request itself is wrong. Fix the input; retrying will not help. */
  InvalidInput: "fix the input; do not retry",
  /** Stored data failed a check. Stop and report; never apply or acknowledge it. */
  Corruption: "stop and report; do not apply",
  /** A bug or an outcome Cairn cannot classify. Report it. */
  Internal: "report a bug",
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

/**
 * Every precise cause and its public kind. Add a code here when a new cause needs a
 * distinct name; the kind decides retry behaviour everywhere else.
 */
export const ERROR_CODES = {
  // object store
  CAS_CONFLICT: "Conflict",
  STORE_TRANSIENT: "Unavailable",
  STORE_UNREACHABLE: "Unavailable",
  STORE_AMBIGUOUS_OUTCOME: "Unavailable",
  STORE_ACCESS_DENIED: "InvalidInput",
  STORE_BUCKET_MISSING: "InvalidInput",
  STORE_URL_INVALID: "InvalidInput",
  STORE_KEY_INVALID: "InvalidInput",
  STORE_NO_CONDITIONAL_WRITES: "InvalidInput",
  STORE_REQUEST_FAILED: "Internal",
  STORE_OBJECT_INVALID: "Corruption",
  /** A store's parent link (a branch's root) cannot be read or followed. */
  STORE_LINK_INVALID: "Corruption",
  /** The store can no longer promise durability (a failed fsync): it refuses all further use. */
  STORE_FAILED: "Unavailable",
  // values, ids, keys
  VALUE_INVALID: "InvalidInput",
  VALUE_TOO_LARGE: "InvalidInput",
  VALUE_TOO_DEEP: "InvalidInput",
  DOCUMENT_ID_INVALID: "InvalidInput",
  DOCUMENT_ID_WRONG_TABLE: "InvalidInput",
  INDEX_KEY_INVALID: "InvalidInput",
  KEY_RANGE_INVALID: "InvalidInput",
  // local materialization
  LOCAL_META_MISMATCH: "InvalidInput",
  LOCAL_HISTORY_UNAVAILABLE: "InvalidInput",
  LOCAL_APPLY_INVALID: "InvalidInput",
  LOCAL_RESTORE_INVALID: "Corruption",
  LOCAL_SCHEMA_UNSUPPORTED: "InvalidInput",
  LOCAL_BUSY: "Unavailable",
  LOCAL_CLOSED: "Unavailable",
  LOCAL_FOLD_FAILED: "Unavailable",
  /** Another live process uses the local directory (its lock file names it): stop it, or use another directory. */
  LOCAL_DIRECTORY_LOCKED: "Conflict",
  /** Another live process is registered under this node's id (`nodes/{nodeId}`): give each node its own id. */
  NODE_ID_IN_USE: "Conflict",
  // manifest, log, snapshots
  DEPLOYMENT_MISMATCH: "InvalidInput",
  MANIFEST_INVALID: "Corruption",
  GLOBALS_INVALID: "Corruption",
  WATERMARK_INVALID: "Corruption",
  SEGMENT_INVALID: "Corruption",
  SEGMENT_CHAIN_BROKEN: "Corruption",
  SNAPSHOT_INVALID: "Corruption",
  SNAPSHOT_MISSING: "Conflict",
  LOG_GAP: "Corruption",
  LEASE_HELD: "Conflict",
  /** Another reshard holds the deployment's reshard lock. */
  RESHARD_IN_PROGRESS: "Conflict",
  /** The deployment's layout changed under this process (a reshard switched globals). */
  DEPLOYMENT_RESHARDED: "Fenced",
  /** Nodes of the deployment are registered live: a reshard would retire the layout they serve. */
  NODES_LIVE: "Conflict",
  /** Data a reshard read does not route the way the schema catalog says it should. */
  RESHARD_DATA_MISMATCH: "InvalidInput",
  RESHARD_LOCK_INVALID: "Corruption",
  /** A `cairn restore` into this root has not finished: re-run it (or delete the prefix). */
  RESTORE_UNFINISHED: "Conflict",
  /** The restore's target already holds objects (a deployment, or anything else). */
  RESTORE_TARGET_NOT_EMPTY: "InvalidInput",
  /** The asked timestamp is not restorable: before the retention window, or not yet settled. */
  RESTORE_OUT_OF_RANGE: "InvalidInput",
  /** A branch registration in the parent's root cannot be parsed (it holds nothing back). */
  BRANCH_REGISTRATION_INVALID: "Corruption",
  /** The branch's parent no longer holds what it reads (its registration expired or is gone). */
  BRANCH_PARENT_EXPIRED: "InvalidInput",
  /** No branch of that id is registered in the parent. */
  BRANCH_NOT_FOUND: "InvalidInput",
  FENCED: "Fenced",
  ENGINE_POISONED: "Unavailable",
  ENGINE_CLOSED: "Unavailable",
  NOT_WRITER: "Unavailable",
  WRITE_CONFLICT: "Conflict",
  BATCH_TOO_LARGE: "InvalidInput",
  // functions runtime
  SCHEMA_INVALID: "InvalidInput",
  SCHEMA_CHANGE_REFUSED: "InvalidInput",
  SCHEMA_CATALOG_INVALID: "Corruption",
  APP_LOAD_FAILED: "InvalidInput",
  FUNCTION_NOT_FOUND: "InvalidInput",
  /**
   * The function's own code threw something other than a deliberate error (a bug, an
   * unexpected state): the client learns only the request id; the server logs the stack.
   */
  FUNCTION_FAILED: "Internal",
  /** The function threw a deliberate error (AppError), with the data it attached for the client. */
  APP_ERROR: "InvalidInput",
  /** The handler ran past its time limit; the call failed and wrote nothing. */
  FUNCTION_TIMEOUT: "InvalidInput",
  DOCUMENT_NOT_FOUND: "InvalidInput",
  /** An imported document's id holds a different document already. */
  IMPORT_CONFLICT: "Conflict",
  /** An archive that cannot be imported: malformed, truncated, or at odds with the schema. */
  IMPORT_INVALID: "InvalidInput",
  QUERY_NOT_UNIQUE: "InvalidInput",
  /** A read or write beyond a function's documented bounds: paginate, or split the work. */
  FUNCTION_LIMIT_EXCEEDED: "InvalidInput",
  /** An index added to a table that holds data is being backfilled; it answers once that is done. */
  INDEX_NOT_READY: "Unavailable",
  /** A mutation touched documents of more than one shard (or of a shard other than its own): nothing was written. */
  CROSS_SHARD_MUTATION: "InvalidInput",
  /**
   * The mutation's (clientId, seq) holds another identity's receipt: nothing ran and
   * nothing of that receipt is told (also to the same client re-sending after its
   * identity changed). Send new mutations with new seqs.
   */
  RECEIPT_IDENTITY_MISMATCH: "InvalidInput",
  /**
   * The mutation's seq is below its client's floor (it acknowledged that seq's result
   * already, and the receipt was pruned): a re-send of an old mutation, refused, never
   * run a second time.
   */
  MUTATION_SEQ_BELOW_FLOOR: "InvalidInput",
  // file storage
  /** An upload over the deployment's file size limit (or declaring it): refused before a byte is kept. */
  FILE_TOO_LARGE: "InvalidInput",
  /** An upload that cannot be taken: no or a wrong Content-Length, a body that ended early or ran long, an expired or forged upload URL. Nothing of it is kept. */
  UPLOAD_INVALID: "InvalidInput",
  /** A storage id of no stored file (never stored, or deleted). */
  FILE_NOT_FOUND: "InvalidInput",
  /** File storage is served by a node (`cairn serve`, `cairn dev`): a runtime without one cannot store or link files. */
  FILE_STORAGE_UNAVAILABLE: "Unavailable",
  // sync protocol and server
  /** A frame or request that is not valid JSON or not a message of the protocol. */
  PROTOCOL_INVALID: "InvalidInput",
  /** A frame or request body over MESSAGE_BYTES_MAX. */
  MESSAGE_TOO_LARGE: "InvalidInput",
  /** A token the verifier refused (bad signature, expired, wrong issuer or audience). */
  UNAUTHENTICATED: "InvalidInput",
  /** An admin operation without the deployment's admin key. */
  FORBIDDEN: "InvalidInput",
  /** A session over one of its documented limits (queries, requests in flight, topics). */
  SESSION_LIMIT_EXCEEDED: "InvalidInput",
  /** The session could not keep up (its response budget overflowed or it stayed over limits). */
  SESSION_OVERLOADED: "Unavailable",
  /** A mutation of a batch not run because an earlier entry failed transiently: send it again. */
  MUTATION_NOT_RUN: "Unavailable",
  /** The connection dropped before an answer that cannot be re-sent safely (an action). */
  CONNECTION_LOST: "Unavailable",
  // client outbox
  /** A client's persisted outbox failed its check: none of its mutations is sent; its content is kept aside (details.keptAt). */
  OUTBOX_INVALID: "Corruption",
  /** Another client (a tab, a process) holds this outbox: this client runs without it. */
  OUTBOX_LOCKED: "Conflict",
  /** The outbox could not be read or written (disk, quota, no IndexedDB or Web Locks): its mutations wait until a write succeeds. */
  OUTBOX_UNAVAILABLE: "Unavailable",
  /**
   * Mutations not answered (restored from the outbox, or made in this session as a user)
   * were issued under another identity than the one the client is signed in as now
   * (details.seqs, details.issuedAs): they are held, never sent under it. Sign in as
   * their identity to send them, or drop them with `discardPendingMutations` (one of this
   * session then rejects with this code, details.discarded); retrying changes nothing.
   */
  OUTBOX_IDENTITY_MISMATCH: "InvalidInput",
  /** The server is stopping; reconnect (to it after restart, or to another node). */
  SERVER_STOPPING: "Unavailable",
  // replicas
  /** A replica has not applied the log up to a ts the caller needs (it has seen it, or wrote it): retry, or use another node. */
  REPLICA_BEHIND: "Unavailable",
  /** The shard's writer did not answer a forwarded call (or none is named); retry with the same (clientId, seq). */
  WRITER_UNAVAILABLE: "Unavailable",
  /** A replica's app has tables or indexes the deployment's schema does not have yet: deploy it on the writer first. */
  SCHEMA_NOT_DEPLOYED: "InvalidInput",
  NODE_ENTRY_INVALID: "Corruption",
  // generic
  INVALID_ARGUMENT: "InvalidInput",
  TIMEOUT: "Unavailable",
  INTERNAL: "Internal",
} as const satisfies Record<string, ErrorKind>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface CairnErrorOptions {
  readonly cause?: unknown;
  /** Structured context for logs and tests (key, seqno, etag …). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** What an app attached to a deliberate error (AppError): a value that travels to the client as it is. */
  readonly data?: unknown;
}

export class CairnError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly details: Readonly<Record<string, unknown>>;
  /** An app's structured data for the client (APP_ERROR); undefined for every other error. */
  readonly data: unknown;

  constructor(code: ErrorCode, message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = `CairnError[${code}]`;
    this.code = code;
    this.kind = ERROR_CODES[code];
    this.details = options.details ?? {};
    this.data = options.data;
  }

  /** Whether the same call may succeed if repeated later unchanged. */
  get retryable(): boolean {
    return this.kind === "Unavailable" || this.kind === "Conflict";
  }
}

/** Structural check: works across module copies and for plain objects off the wire. */
export function hasErrorCode(error: unknown, code: ErrorCode): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

export function errorKindOf(error: unknown): ErrorKind {
  if (typeof error === "object" && error !== null) {
    const kind = (error as { kind?: unknown }).kind;
    if (typeof kind === "string" && kind in ERROR_KINDS) return kind as ErrorKind;
  }
  return "Internal";
}

export function isCasConflict(error: unknown): boolean {
  return hasErrorCode(error, "CAS_CONFLICT");
}

/** Transient store trouble: the operation may be retried (with backoff). */
export function isStoreTransient(error: unknown): boolean {
  return hasErrorCode(error, "STORE_TRANSIENT") || hasErrorCode(error, "STORE_UNREACHABLE");
}

export function invalidArgument(message: string, details?: Record<string, unknown>): CairnError {
  return new CairnError("INVALID_ARGUMENT", message, details ? { details } : {});
}

/** For programmer errors: invariants that must hold. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CairnError("INTERNAL", `assertion failed: ${message}`);
}
