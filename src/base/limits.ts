/**
 * Every bound in Cairn, named once, with the reason for its value. Code refers to these
 * constants; options that override them carry units in their names.
 */

// ---- object store -------------------------------------------------------------------

/** S3 ListObjectsV2 returns at most 1000 keys per page; asking for more is ignored. */
export const LIST_PAGE_KEYS_MAX = 1000;
/** S3 DeleteObjects accepts at most 1000 keys per request. */
export const DELETE_BATCH_KEYS_MAX = 1000;
/**
 * Attempts for one store operation that failed transiently (503 SlowDown, 500, 429,
 * connection reset). 6 attempts with the backoff below span ~3 s, longer than a typical
 * S3 throttling burst, short enough that a dead endpoint surfaces quickly.
 */
export const STORE_ATTEMPTS_MAX = 6;
/** First backoff after a transient error; doubles per attempt with full jitter. */
export const STORE_BACKOFF_BASE_MS = 50;
/** Backoff ceiling: R2 allows one write per second per key, so never wait much longer. */
export const STORE_BACKOFF_MAX_MS = 1_000;
/** S3 keys are at most 1024 bytes of UTF-8. */
export const STORE_KEY_BYTES_MAX = 1024;
/**
 * Shortest wait after a 429: R2 accepts one write per second per key, so retrying sooner
 * only earns another 429 (and 6 attempts of plain jittered backoff can end inside 1 s).
 */
export const STORE_THROTTLED_BACKOFF_MIN_MS = 1_000;
/**
 * Attempts of the bucket check made when a store is opened. 3 attempts with 2 s connect
 * timeouts report a dead endpoint within ~7 s instead of the ~15 s of a full retry run.
 */
export const STORE_OPEN_ATTEMPTS_MAX = 3;
/** TCP connect timeout: a healthy endpoint connects in < 300 ms even across regions. */
export const STORE_CONNECT_TIMEOUT_MS = 2_000;
/**
 * Longest wait for the answer to the bucket check at open. HeadBucket answers in well
 * under 300 ms from anywhere; with 3 attempts an endpoint that accepts connections but
 * never answers (a hung proxy, the wrong port) is reported in ~6 s, not after minutes.
 */
export const STORE_OPEN_ANSWER_TIMEOUT_MS = 2_000;
/**
 * A socket silent this long is abandoned (a read is retried, a write becomes an ambiguous
 * outcome). S3 sends the first byte of even a 5 GB GET within seconds.
 */
export const STORE_SOCKET_IDLE_TIMEOUT_MS = 30_000;
/**
 * Open sockets per S3 client. A node runs hundreds of concurrent GETs while tailing and
 * restoring; 256 keeps them from queueing behind the SDK's default of 50 while staying
 * far below a process's file-descriptor limit (1024 by default).
 */
export const STORE_SOCKETS_MAX = 256;
/** Concurrent deletes of a deleteMany on a directory store (each is a lock and an unlink). */
export const FS_DELETE_CONCURRENCY_MAX = 16;
/**
 * Longest path component the directory store writes: below eCryptfs's 143-byte limit
 * (ext4, APFS and NTFS allow 255); longer encoded key segments are split into chunks.
 */
export const FS_NAME_CHUNK_CHARS_MAX = 120;
/**
 * Age after which an *unreadable* key lock file (torn by a crash during a power loss) is
 * broken, by its mtime. A readable lock is never broken for its age, only when its
 * holder process is provably gone (FsKeyLocks): a live holder paused for minutes between
 * its etag check and its rename would otherwise lose its lock and two casPuts on one
 * etag would both succeed. Writing a lock and linking it takes microseconds; 30 s is
 * more than five orders of magnitude more, so a lock in a format this version cannot
 * parse is waited for, not broken at once.
 */
export const FS_LOCK_STALE_MS = 30_000;
/**
 * Longest wait for a key lock before giving up with STORE_TRANSIENT, which names the
 * holder and its lock file. Locks are held for milliseconds, so a wait this long means
 * a stuck holder, a holder on another host, or a lock left by a dead process that cannot
 * be proven dead; 45 s rides out a long GC pause or a swapped-out holder.
 */
export const FS_LOCK_WAIT_MS_MAX = 45_000;
/** Longest sleep between two attempts to take a held key lock (jittered). */
export const FS_LOCK_POLL_MS_MAX = 20;
/**
 * Times a write re-creates its parent directories because a concurrent delete removed
 * them (deletes prune empty directories). Each loss needs a full delete in between.
 */
export const FS_PARENT_RETRIES_MAX = 16;
/** Temporary files older than this were left by a crashed writer and are swept. */
export const FS_TEMPORARY_STALE_MS = 3_600_000;

// ---- values and documents ------------------------------------------------------------

/** Largest encoded document. Bigger values belong in file storage, not a document log. */
export const DOCUMENT_BYTES_MAX = 1024 * 1024;
/** Deepest nesting of arrays/objects; bounds recursion in encoders and validators. */
export const VALUE_DEPTH_MAX = 64;
/**
 * Longest object field name, in UTF-16 code units. Field names are schema, not data:
 * 1024 is far above any real name and keeps a hostile name from dominating index keys.
 */
export const FIELD_NAME_LENGTH_MAX = 1024;

// ---- local materialization (SQLite) --------------------------------------------------

/**
 * Rows per dump chunk. A chunk is one unit handed to the snapshot writer; 1000 rows of
 * small documents is ~100 KiB, small next to its 8 MiB parts, big enough that per-chunk
 * overhead (one object, one switch) is noise.
 */
export const LOCAL_DUMP_ROWS_PER_CHUNK = 1000;
/**
 * A dump chunk is cut once its encoded values reach this many bytes, whatever its row
 * count, so 1000 documents of 1 MiB never sit in memory at once. A single larger row
 * still forms a chunk of its own.
 */
export const LOCAL_DUMP_CHUNK_BYTES_MAX = 4 * 1024 * 1024;
/**
 * Rows examined per pruning transaction. 10k rows take ~50 ms on a small 2-core VM, so a
 * transaction stays short and adds a few MiB of WAL at most. A prune call runs its batches
 * back to back, in time proportional to the rows written since the previous prune (and
 * to the index entries, when an index sweep is due: LOCAL_INDEX_SWEEP_INTERVAL_MS).
 */
export const LOCAL_PRUNE_BATCH_ROWS = 10_000;
/**
 * A sweep of a shard's index entries (pruning keys' older revisions) begins at most this
 * often during routine bounded pruning. A sweep reads every index entry of the shard, so
 * starting one at every prune (each 5 s) cost a node time proportional to the whole
 * store, every 5 s, for every shard it holds — in a fleet, on every node. Index history
 * then lingers up to this much longer past the retention window; reads are unaffected
 * (they never see below the readable floor).
 */
export const LOCAL_INDEX_SWEEP_INTERVAL_MS = 60_000;
/**
 * SQLite page cache of each connection to a store's file (the main one, the fold and
 * checkpoint workers'), in KiB. Misses are served by the OS page cache, so size matters
 * little for speed (measured: 16 MiB and 256 MiB apply 200k documents within 3% of each
 * other); 16 MiB holds the interior B-tree pages of a shard of a few GB (a 1M-document
 * shard's are ~5 MiB) and every page a 1,000-document batch dirties. It is native memory
 * outside the node's heap limit: up to 48 MiB a shard (32 MiB was 96 MiB, a fifth of a
 * 500 MiB node).
 */
export const LOCAL_PAGE_CACHE_KIB = 16 * 1024;
/**
 * SQLite page size of a store file, fixed when the file is created (a file made with
 * another page size is read as it is). A fold's cost is set by how many B-tree pages it
 * touches, reads from the OS and writes to the WAL and back, not by their bytes: with
 * random keys each written row lands on a page of its own, and larger pages make
 * shallower trees with fewer pages to touch. Measured with `bench:local` at 5M documents
 * (two index entries each): 4 KiB pages fold 30k documents/s, 8 KiB 33k, 16 KiB 42k,
 * with reads as fast (get p50 ~13 µs, 100-row scan p50 ~0.6 ms).
 */
export const LOCAL_PAGE_BYTES = 16 * 1024;
/**
 * WAL size at which the next fold waits for the checkpoint worker to copy every frame
 * back, so that its transaction starts the WAL over (Folder.ts). Checkpoints run after
 * every fold, beside the next one; without such a pause SQLite never rewinds the WAL.
 * At 5M documents a fold of ~45k documents writes ~0.9 GB of 16 KiB pages, so the WAL
 * file reaches about this plus one fold, and one checkpoint in two or three is waited
 * for. Readers look pages up in the WAL's index, which grows with it: 1 GiB keeps
 * `get` p50 within its 20 µs.
 */
export const LOCAL_WAL_RESTART_BYTES = 1024 * 1024 * 1024;
/**
 * How long a connection waits for another's write lock. The fold worker and the main
 * connection never write at once by design; this covers a worker that is still shutting
 * down while a reopened store starts its own.
 */
export const LOCAL_BUSY_TIMEOUT_MS = 10_000;
/**
 * Rows (document revisions + index entries + receipts) in the overlay that start a fold
 * at once, without waiting for LOCAL_FOLD_DELAY_MS. A fold costs per touched B-tree page
 * (at 1M documents nearly every page of the index, whatever the fold's size), so bigger
 * folds are cheaper per row. When the event loop rather than the fold worker is the
 * bound (a replica decoding segments), folds used to start at 30,000 rows and cost the
 * shared cores ~22 µs per document instead of ~12; 120,000 (with LOCAL_FOLD_MIN_BYTES
 * 48 MiB), about 40% of the overlay's bound then, took catch-up at 1M and 5M documents
 * from ~34–42k to ~44k documents/s. Now 40% of the smaller node-wide bound (80,000 rows,
 * 36 MiB: every store of a node folds there too, OverlayBudget.ts): catch-up at 1M
 * 56k documents/s. Under load, rows accumulate while a fold runs and the next one takes
 * them all.
 */
export const LOCAL_FOLD_MIN_ROWS = 80_000;
/**
 * Dump chunks a restore loads between two checkpoints that the checkpoint worker runs
 * beside it (~1,000 rows each: 64 chunks are ~10–30 MiB of WAL).
 */
export const LOCAL_RESTORE_CHUNKS_PER_CHECKPOINT = 64;
/** Longest a row waits in the overlay before a fold starts on a quiet store. */
export const LOCAL_FOLD_DELAY_MS = 250;
/**
 * Unfolded rows above which a node's overlays ask their writers to wait (`LocalStore.room()`):
 * a replica far behind downloads faster than it folds. The bound is the node's, shared
 * by all its shards (OverlayBudget.ts), not each shard's. Measured: a small document
 * (~190 bytes, two index entries) is ~3.4 rows and ~1.7 KiB of live JS heap in the
 * overlay, so 200k rows are ~100 MiB. At 1M documents with the node's heap cap,
 * bench:local peaked at 517 MiB with 300k rows and 461 MiB with 200k; sustained apply
 * 72k → 69k documents/s, catch-up 63k → 56k (every store folds at 40% of it, 80k rows).
 * The writer's own commits never get near it.
 */
export const LOCAL_OVERLAY_ROWS_MAX = 200_000;

/** Clients' receipt floors (and, apart, their highest receipt seqs) a local store keeps in memory (~100 bytes each) before it clears them and reads them again. */
export const LOCAL_FLOOR_CACHE_ENTRIES_MAX = 100_000;
/**
 * The same bound (per node) in bytes of the rows' values, ids and keys: rows of large
 * documents reach it long before the row bound (200,000 rows of 1 MiB documents would not
 * fit in any heap). 96 MiB of large values is about the heap the row bound allows small
 * documents (~100 MiB), well inside a node's default heap cap of 512 MiB.
 */
export const LOCAL_OVERLAY_BYTES_MAX = 96 * 1024 * 1024;
/** Bytes in the overlay that start a fold at once, as LOCAL_FOLD_MIN_ROWS does for rows. */
export const LOCAL_FOLD_MIN_BYTES = 36 * 1024 * 1024;

// ---- shard log ------------------------------------------------------------------------

/**
 * Segments a reader fetches before it re-reads the manifest and applies them (one read
 * round, DESIGN.md §4 validity). Each round costs one conditional GET of the manifest
 * (a 304: $0.0004 per 1000): at 1,024 segments a round that is 0.1% more GETs while
 * replaying, and a tailing replica pays one per poll.
 */
export const CATCH_UP_ROUND_SEGMENTS_MAX = 1_024;
/**
 * … or this many segment bytes, whichever comes first: a round's segments wait in memory
 * until the manifest read, and segments may be up to 8 MiB each.
 */
export const CATCH_UP_ROUND_BYTES_MAX = 64 * 1024 * 1024;
/**
 * Largest `heartbeatMissesMax` a shard engine accepts. Far beyond any useful value: a
 * writer whose renewals fail steps down once its lease may have lapsed, whatever the
 * count; the bound only keeps the option a small, finite number.
 */
export const HEARTBEAT_MISSES_MAX = 1_000;

// ---- functions runtime ----------------------------------------------------------------

/**
 * Attempts of one mutation that keeps losing optimistic-concurrency races (the first run
 * included). Re-runs after a conflict wait for the commits in flight and queue behind
 * other re-runs of the same hot document, so each attempt loses only to a fresh mutation
 * that committed first; 16 rides out bursts of hundreds of contenders on one document
 * while a mutation that cannot win (a livelock) still fails within ~16 flushes (~1 s on S3).
 */
export const MUTATION_ATTEMPTS_MAX = 16;
/** Ceiling of the jittered sleep before a re-run (after waiting for the commits in flight). */
export const MUTATION_BACKOFF_MAX_MS = 50;
/**
 * Rows one `collect()` may return, and the largest `take(n)`: a query that needs more
 * should paginate. 16,384 rows of ~1 KiB documents are ~16 MiB of results, about what
 * a client can take in one message.
 */
export const QUERY_COLLECT_ROWS_MAX = 16_384;
/**
 * Largest `numItems` of one page of `paginate`, and the most rows a page pinned by
 * `endCursor` returns (one holding more returns these with a splitCursor, partial).
 */
export const QUERY_PAGE_ITEMS_MAX = 8_192;
/**
 * A pinned page holding more rows than this, or than 2 × its numItems, comes back with a
 * splitCursor (usePaginatedQuery splits it in two). Half of QUERY_PAGE_ITEMS_MAX: 4,096
 * more rows can land in the page while its split is in flight before its reads are cut.
 */
export const QUERY_PAGE_SPLIT_ROWS_MAX = 4_096;
/**
 * Rows a filtered page (`filter(…).paginate`) reads past its filter before it answers with
 * fewer than numItems (isDone false, its continueCursor after the last row read): a filter
 * that matches little cannot make one page read a whole table.
 */
export const QUERY_FILTER_SCAN_ROWS_MAX = 16_384;
/**
 * Rows (documents and index entries) one function run may read in total. Bounds the time
 * and memory one call can take from every other caller: ~65k rows are ~50 ms of reads on a
 * warm store.
 */
export const FUNCTION_READ_ROWS_MAX = 65_536;
/**
 * Documents one mutation may write. A mutation is one write unit, committed in one
 * segment and held in memory until then; 8,192 small documents are a few MiB. Bulk loads
 * split into many mutations.
 */
export const MUTATION_DOCUMENTS_MAX = 8_192;
/** Documents per write unit while backfilling a new index (re-done on a conflict). */
export const INDEX_BACKFILL_BATCH_DOCUMENTS = 512;
/**
 * Longest run of one query or mutation handler (a re-run starts its own). Their only I/O
 * is the local store, so a run that takes seconds is a bug (a promise that never settles,
 * a runaway loop over awaits) and must not hold its hot-row lane, and everything queued
 * behind it, forever. Overridable per runtime (`functionRunMsMax`).
 */
export const FUNCTION_RUN_MS_MAX = 10_000;
/** Longest run of an action handler, which may call out over the network (`actionRunMsMax`). */
export const ACTION_RUN_MS_MAX = 10 * 60_000;
/** How often running handlers are checked against their time limit (a timeout fires up to this late). */
export const FUNCTION_WATCHDOG_INTERVAL_MS = 250;

// ---------------------------------------------------------------------------------------
/**
 * WebSocket sessions one node holds at once; an upgrade past it is refused with 503 (the
 * client backs off and reconnects, to this node or another behind a load balancer). Each
 * session is bounded on its own (SESSION_*); this bounds how many: an idle session costs
 * ~10–50 KiB, so 10,000 stay well under a GiB, and a flood of connections from one
 * hostile client cannot take every file descriptor and the heap with it.
 */
export const NODE_SESSIONS_MAX = 10_000;
/**
 * Nodes a writer keeps hinting (the registry's listing and the followers that announced
 * themselves since): a deployment has a handful to hundreds; the bound keeps a flood of
 * announcements (admin key only, but unchecked until the next listing) from growing the
 * writer's state. A follower past it is hinted once the listing names it, and polls.
 */
export const HINT_TARGETS_MAX = 1_000;
/**
 * A verified segment up to this size travels inside its wake hint, so that followers
 * apply it without a GET (and without the GETs of the empty slot after it); a larger one
 * is hinted by hash and read from the bucket. Under load a segment holds tens of small
 * mutations (~4–40 KiB); a segment this large is a bulk write, where one GET per follower
 * is cheap beside the apply.
 */
export const HINT_SEGMENT_BYTES_MAX = 1024 * 1024;
/**
 * Segment bytes waiting for one follower behind the hint request on the wire. Past it the
 * oldest waiting hints lose their bytes (the follower reads those segments), so a slow or
 * dead follower costs the writer at most this much memory.
 */
export const HINT_PENDING_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Hints waiting for one follower, per shard, behind the request on the wire: the oldest
 * go first (their segments are read and judged by the manifest like any other).
 */
export const HINT_PENDING_PER_SHARD_MAX = 256;
/**
 * Segment bytes a follower keeps per shard from its writer's hints until it applies them
 * (normally milliseconds: they pile up only while the follower cannot apply, e.g. waiting
 * for a segment it must read first): past it the oldest are dropped and read from the
 * bucket, so a node following 64 shards holds at most 256 MiB of them, and a flood of
 * hints (admin key only) cannot grow it further.
 */
export const VOUCHED_SEGMENT_BYTES_MAX = 4 * 1024 * 1024;

// Sync sessions and the server (DESIGN.md §8). The session limits are per connection:
// whatever one client does, it can hold at most these on the server.

/**
 * Largest WebSocket frame or HTTP request body accepted. Arguments hold at most a few
 * documents (each ≤ DOCUMENT_BYTES_MAX = 1 MiB), so 16 MiB leaves room for a batch of
 * mutations while a hostile frame cannot make the server buffer more than this.
 */
export const MESSAGE_BYTES_MAX = 16 * 1024 * 1024;
/**
 * A session hands frames to its socket only while the socket holds less than this
 * unsent; beyond, frames wait in the session's queues. 1 MiB is ~100 ms of a 10 MB/s
 * client link: a client reading at all keeps its queue empty.
 */
export const SESSION_SEND_BUFFER_BYTES = 1024 * 1024;
/**
 * Droppable frames (Transitions, Broadcasts) a session queues beyond its socket. Past
 * either bound the queued Transitions are dropped and the session is resynced with one
 * Transition carrying every query's current result once the socket drains: a slow
 * reader costs the server a bounded queue and one re-run of its queries, not memory
 * that grows with the commit rate.
 */
export const SESSION_DROPPABLE_FRAMES_MAX = 200;
export const SESSION_DROPPABLE_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Responses (MutationResponse, ActionResponse, ConnectAck …) are never dropped: a client
 * must learn each mutation's outcome. A client that stops reading while it sends
 * requests would grow them without bound, so past this budget the session is closed
 * (once, with a log line); its mutations stay answerable from their receipts.
 */
export const SESSION_RESPONSE_FRAMES_MAX = 1_000;
export const SESSION_RESPONSE_BYTES_MAX = 16 * 1024 * 1024;
/** A session over its limits (socket full, resync pending) this long is disconnected. */
export const SESSION_OVER_LIMITS_MS_MAX = 30_000;
/** Queries one session may subscribe to at once. */
export const SESSION_QUERIES_MAX = 1_000;
/**
 * Queries a session holds refused (past SESSION_QUERIES_MAX or SESSION_QUERY_ARGS_BYTES_MAX,
 * or with arguments that do not decode): each keeps only its id and a shared QueryFailed
 * result until the client removes it. A client that piles up more than this without
 * removing any is broken or hostile; its session is ended (SESSION_LIMIT_EXCEEDED).
 */
export const SESSION_REFUSED_QUERIES_MAX = 1_000;
/**
 * Arguments (JSON characters) of all queries one session subscribes to. A live query's
 * arguments are ids and filters, ~100 bytes; 1 MiB is 1 KiB for each of
 * SESSION_QUERIES_MAX queries, while without it 1,000 queries of one 16 MiB frame each
 * would pin 16 GiB. A query past it is refused with SESSION_LIMIT_EXCEEDED.
 */
export const SESSION_QUERY_ARGS_BYTES_MAX = 1024 * 1024;
/**
 * Frames a session has received and not finished (waiting to be taken in order, a
 * query-set change waiting for its turn, mutations and actions not yet answered), in
 * characters of frame text, each frame counted as at least SESSION_FRAME_BYTES_MIN (its
 * parsed form and bookkeeping). Two maximal frames fit; a client that sends faster than
 * its requests finish is ended (SESSION_LIMIT_EXCEEDED) instead of queueing without
 * bound — its mutations stay answerable from their receipts.
 */
export const SESSION_INBOUND_BYTES_MAX = 32 * 1024 * 1024;
export const SESSION_FRAME_BYTES_MIN = 1024;
/**
 * Query ids removed while a session's resync is pending, remembered to tell the client
 * in the resync. Churning the query set while not reading past this ends the session.
 */
export const SESSION_REMOVED_UNSENT_MAX = 10_000;
/** Requests (mutations and actions) one session may have waiting or running at once. */
export const SESSION_REQUESTS_IN_FLIGHT_MAX = 1_000;
/** Entries in one MutationBatch. */
export const MUTATION_BATCH_ENTRIES_MAX = 1_000;
/** Topics one session may listen to for Broadcasts. */
export const SESSION_TOPICS_MAX = 100;
/** Longest topic name (characters) of Publish and ModifyTopics. */
export const TOPIC_CHARS_MAX = 256;
/** Longest function path, session id, client id or token a frame may carry (characters). */
export const PROTOCOL_NAME_CHARS_MAX = 256;
export const AUTH_TOKEN_CHARS_MAX = 16 * 1024;
/** The longest admin key a session may present (AdminAuth). */
export const ADMIN_KEY_CHARS_MAX = 1024;
/** Wrong admin keys a session may present before it is ended (guessing costs a connection each few tries). */
export const SESSION_ADMIN_KEY_REFUSALS_MAX = 3;
/**
 * Ping interval; a connection that missed two pongs in a row is closed. 30 s keeps NAT
 * and proxy mappings alive and finds a dead peer within ~1 minute.
 */
export const PING_INTERVAL_MS = 30_000;
export const PINGS_MISSED_MAX = 2;
/**
 * Recent commits' written keys the sync handler keeps, to check a query whose run
 * overlapped them (its new read ranges were installed after those commits were matched).
 * A query that ran longer than this window re-runs once more: the bound costs a re-run,
 * never a missed update. A key is a range of two index keys, ~450 bytes of heap: 50,000
 * keys are ~22 MiB, ~2 s of 6,000 mutations/s of 4 keys each (1,000,000 held ~450 MiB,
 * most of a node's memory under a bulk insert).
 */
export const SYNC_RECENT_COMMITS_MAX = 4_096;
export const SYNC_RECENT_KEYS_MAX = 50_000;
/**
 * Recent commits' written documents the sync handler keeps, to move diffable
 * subscriptions (issue 30) from their result's ts to a commit's without running them: a
 * subscription whose window reaches past what is kept runs again (a spare run, never a
 * wrong diff). Bounded by revisions and by their text (UTF-16, estimated).
 */
export const SYNC_RECENT_REVISIONS_MAX = 50_000;
export const SYNC_RECENT_REVISIONS_BYTES_MAX = 32 * 1024 * 1024;
/**
 * A closed session's subscriptions stay registered this long, so that its client,
 * reconnecting with the session's id, is answered QueryUnchanged for what no commit
 * touched since (issue 30, resume) instead of a run each. At most this many sessions and
 * queries and this much heap (read ranges and digests, estimated) are kept, the oldest
 * dropped first: a dropped registration costs runs, never a wrong answer.
 */
export const SYNC_RESUME_TTL_MS = 60_000;
export const SYNC_RESUME_SESSIONS_MAX = 10_000;
export const SYNC_RESUME_QUERIES_MAX = 200_000;
export const SYNC_RESUME_BYTES_MAX = 64 * 1024 * 1024;
/** Changes one QueryDiff may carry; a commit that changes more rows of a result sends it whole. */
export const SYNC_DIFF_CHANGES_MAX = 256;
/**
 * Query results kept for sharing between sessions with the same subscription (same
 * path, args and identity) at the same timestamp: one run per commit, not per session.
 */
export const SYNC_SHARED_RESULTS_MAX = 10_000;
/**
 * … and at most this much heap (result text and read ranges, estimated): without it
 * 10,000 results of a few MiB each would pin gigabytes. 64 MiB holds 10,000 results of
 * ~6 KiB; a bigger result is evicted sooner and at worst runs once per session.
 */
export const SYNC_SHARED_RESULTS_BYTES_MAX = 64 * 1024 * 1024;
/**
 * A follower reports replay progress ("replaying segment N") only while it is at least
 * this many segments behind the log's tail hint: catching up after a start or a pause
 * takes seconds and deserves a line now and then, while a replica that keeps up applies
 * every commit as it lands and logs nothing per segment (a busy deployment writes
 * several segments a second).
 */
export const CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN = 100;
/** How long a stopping server waits for running requests before it closes the sockets. */
export const SERVER_DRAIN_MS_MAX = 10_000;

/**
 * How long a node waits, on Connect, for its frontier to reach the ts the client has
 * already seen, before it ends the session with REPLICA_BEHIND (the client reconnects
 * with backoff, perhaps to another node).
 */
export const CONNECT_FRONTIER_WAIT_MS = 5_000;
/**
 * How long a replica waits for its own tail to apply a write it forwarded before it
 * answers REPLICA_BEHIND (the write is durable; a re-send with the same (clientId, seq)
 * is answered from its receipt).
 */
export const FORWARDED_WRITE_VISIBLE_WAIT_MS = 10_000;
/**
 * How long a node keeps trying to get a forwarded mutation committed (every try bounded
 * by a lease, re-routed across takeovers) before it answers WRITER_UNAVAILABLE: a
 * failover takes a lease plus the skew and a lease check (~13 s by default), so 60 s
 * rides out several, while a caller still hears of a deployment with no writer at all.
 */
export const FORWARDED_MUTATION_TIMEOUT_MS = 60_000;
/**
 * First wait before trying a forwarded mutation again after the writer could not take it
 * (not reachable, not the writer any more), doubling up to the maximum. A route change (a
 * newer epoch seen) cuts the wait short, so the retry after a takeover is immediate;
 * while no writer answers, a try (and a manifest read) at most once a second.
 */
export const FORWARD_RETRY_BACKOFF_BASE_MS = 50;
/**
 * How long, beyond the clock-skew margin, a forwarded mutation keeps trying once its
 * shard's lease has lapsed (or was released) with no new writer: a standby checks leases
 * every 2 s and then acquires, so 5 s sees any takeover that is coming; past it the
 * deployment has no node that may write the shard, and the caller is told at once
 * rather than after FORWARDED_MUTATION_TIMEOUT_MS.
 */
export const FORWARD_TAKEOVER_GRACE_MS = 5_000;
export const FORWARD_RETRY_BACKOFF_MAX_MS = 1_000;
/** … and a forwarded action (its 10 min run limit). */
export const FORWARDED_ACTION_TIMEOUT_MS = 11 * 60_000;

/** A deployment may have at most this many shards; each is a log and a SQLite file. */
export const SHARDS_MAX = 256;

/**
 * How often a node reads `globals` to learn that a reshard retired the layout it serves
 * (LayoutWatcher). 60 GETs an hour per node (~$0.0002 at S3 Standard). Detection is
 * usually much sooner: a follower checks at once when its shard's manifest disappears or
 * a new writer fences it, and while a reshard holds the lock it checks every
 * LAYOUT_CHECK_DURING_RESHARD_MS.
 */
export const LAYOUT_CHECK_INTERVAL_MS = 60_000;

/**
 * While a reshard holds the deployment's lock, how often a node re-reads `globals`: the
 * switch may come at any moment, and until the node sees it, it serves the retired
 * layout. A reshard takes seconds to minutes, so this costs a few dozen GETs per reshard.
 */
export const LAYOUT_CHECK_DURING_RESHARD_MS = 2_000;

/**
 * How long `cairn serve` waits before trying again to re-open on a resharded layout that
 * failed to open (the bucket unreachable, another reshard running). Its health says
 * "stopped" with the reason meanwhile.
 */
export const LAYOUT_REOPEN_RETRY_MS = 5_000;

// ---- fleet ownership (OwnershipPlanner, DESIGN.md §9 "Fleet") ---------------------------

/**
 * A node hands a shard over only when the live set has been the same on this many
 * consecutive beats. A node that is up one beat and down the next never satisfies it, so
 * a flapping node moves no shard; 2 is the least that damps, and each beat more delays
 * every rebalance (never a failover: acquiring an unowned shard is not damped) by a beat.
 */
export const FLEET_HANDOVER_STABLE_BEATS = 2;
/**
 * A shard that has had no live owner for this many consecutive beats is taken by the next
 * node in its rendezvous ranking (after twice as many by the one after, …). The target
 * takes an unowned shard on the first beat it sees it; the two beats more ride out nodes
 * whose views of the live set disagree for a beat (a presence record judged on either side
 * of its expiry), so a rescue only happens when the target is stuck, and a stuck target
 * keeps its shard without a writer for 3 beats, not for ever.
 */
export const FLEET_RESCUE_AFTER_BEATS = 3;
/**
 * A node that rescued a shard keeps it this many beats before the ordinary rules may hand
 * it back to the target that failed to take it, doubling each time that target fails
 * again (up to the maximum) and reset once it takes the shard. A recovered target gets its
 * shard back 10 beats later; one stuck for good leaves its shard without a writer for
 * FLEET_RESCUE_AFTER_BEATS of every ~FLEET_RESCUE_HOLD_BEATS_MAX beats (< 1%), not of
 * every 13.
 */
export const FLEET_RESCUE_HOLD_BEATS_MIN = 10;
export const FLEET_RESCUE_HOLD_BEATS_MAX = 640;

// ---- the app's static files and CORS (StaticFiles, CorsPolicy) -------------------------

/**
 * Files smaller than this are sent uncompressed: gzip saves under a packet's worth on
 * them (a 1 KiB script shrinks by ~600 bytes) and costs a compression per variant.
 */
export const STATIC_COMPRESS_BYTES_MIN = 1024;
/**
 * Compressed variants of the static files kept in memory, in bytes (least recently used
 * dropped first). A built single-page app is typically 0.2–5 MB of compressible assets,
 * about a third of that compressed in each of two encodings: 32 MiB holds several such
 * builds, so each variant is compressed once per process, not once per request.
 */
export const STATIC_COMPRESSED_CACHE_BYTES_MAX = 32 * 1024 * 1024;
/**
 * A compressible file larger than this is compressed while it is sent, on every request
 * (at a faster level, not kept), so one huge file can neither fill the cache nor hold a
 * request until all of it has been compressed at the best level.
 */
export const STATIC_COMPRESS_CACHED_FILE_BYTES_MAX = 4 * 1024 * 1024;
/**
 * How long a browser may reuse an allowed preflight's answer, in seconds. Chromium caps it
 * at 7200 and Firefox at 86400; 10 minutes means at most one extra OPTIONS per API route
 * and page every 10 minutes, and a removed origin stops being allowed within 10 minutes.
 */
export const CORS_PREFLIGHT_MAX_AGE_S = 600;

// ---- the admin API and the dashboard (docs/admin-api.md) ----

/** 2,000 calls: a few minutes of a busy node's history, what one looks through on a page. */
export const LOG_RING_ENTRIES_MAX = 2_000;
/** 8 MiB: 16 entries at the largest (~0.5 MiB each: 64 lines of 8 Ki characters); thousands of typical ones. */
export const LOG_RING_BYTES_MAX = 8 * 1024 * 1024;
/** Entries a logs query returns when it names no limit: a page of them. */
export const LOG_QUERY_DEFAULT_LIMIT = 200;
/** A page shows at most 1,000 entries; more is a download, not a view. */
export const LOG_QUERY_LIMIT_MAX = 1_000;
/** A filter's text is a search term, not a document: 1 Ki characters. */
export const LOG_QUERY_TERM_CHARS_MAX = 1024;
/** 250 ms: four frames a second reads as live on a page and costs a busy node four sends, not thousands. */
export const LOG_FEED_FLUSH_INTERVAL_MS = 250;
/** Entries in one frame, and in the first (the newest of the ring): a page's worth. */
export const LOG_FEED_FRAME_ENTRIES_MAX = 200;
/** 1 MiB: a frame of typical entries never reaches it; two of the largest entries (~0.5 MiB each) do. */
export const LOG_FEED_FRAME_BYTES_MAX = 1024 * 1024;
/** Entries waiting for the next frames: 5 frames' worth, past which the subscriber is behind and skips. */
export const LOG_FEED_PENDING_ENTRIES_MAX = 1_000;
/** 8 MiB waiting at most per subscriber (the ring's own bound): large entries are skipped by bytes before count. */
export const LOG_FEED_PENDING_BYTES_MAX = 8 * 1024 * 1024;
/** 8 Ki characters: a full stack or a page of JSON fits; a 1 MiB dump does not fill the ring by itself. */
export const LOG_TEXT_CHARS_MAX = 8 * 1024;
/** Lines one call keeps: enough to follow a call, while a loop printing 10,000 lines costs 64. */
export const LOG_LINES_PER_CALL_MAX = 64;
/**
 * The most revisions one `revisionsOf` call returns (the admin API's history bound):
 * each costs one seek in the overlay or the file and carries a whole document value (up
 * to DOCUMENT_BYTES_MAX), so one call is at most 100 seeks on the caller's thread.
 */
export const LOCAL_HISTORY_REVISIONS_MAX = 100;
/** The charts span the last hour. */
export const METRICS_HISTORY_MS = 60 * 60 * 1000;
/**
 * Mutation durations kept per interval: percentiles are exact up to 1,000 mutations/s at
 * the default interval and drawn from a uniform sample beyond (p99's rank is then off by
 * well under 1%); 10,000 doubles are 80 KB, allocated once.
 */
export const MUTATION_SAMPLES_PER_INTERVAL_MAX = 10_000;
/** How long a login code stays good: long enough to click the link `cairn dev` printed. */
export const LOGIN_CODE_TTL_MS = 10 * 60 * 1000;
/** Codes outstanding at once; issuing more forgets the oldest. */
export const LOGIN_CODES_MAX = 8;

/** Jobs one function call may schedule (ctx.scheduler.runAfter/runAt): more is a runaway loop, refused (FUNCTION_LIMIT_EXCEEDED). */
export const SCHEDULED_JOBS_PER_CALL_MAX = 1_000;
/**
 * Scheduled jobs one shard's runner has running at once (more due wait their turn): with
 * a commit taking ~100 ms on S3, 256 at once keep up with ~2,500 jobs a second.
 */
export const SCHEDULED_JOBS_RUNNING_MAX = 256;
/** How often a shard's runner looks for due jobs when nothing woke it (a job scheduled on another node, a takeover). */
export const SCHEDULER_POLL_MS = 1_000;
/** How long a job whose run failed for a passing reason (a conflict, a failover) waits before its next try. */
export const SCHEDULER_RETRY_MS = 1_000;
/** Finished jobs (and their receipts' purpose) are kept this long, then deleted by their shard's runner. */
export const SCHEDULED_JOBS_KEPT_MS = 7 * 24 * 60 * 60_000;

/** A stored file's bytes are objects of this size in the bucket (the last one shorter): what an upload or a download holds in memory at once. */
export const FILE_CHUNK_BYTES = 4 * 1024 * 1024;
/** Largest stored file unless the node is told otherwise (`fileBytesMax`, `cairn serve --file-bytes-max`). */
export const FILE_BYTES_MAX = 1024 * 1024 * 1024;
/** How long an upload URL (ctx.storage.generateUploadUrl) is accepted. */
export const UPLOAD_URL_TTL_MS = 60 * 60_000;
/** Longest upload, first chunk to commit: one slower is refused, so the file collector's grace (longer) never takes a live upload's chunks. */
export const UPLOAD_DURATION_MS_MAX = 60 * 60_000;
/** How long chunks no stored file refers to are left before the file collector deletes them (over UPLOAD_DURATION_MS_MAX). */
export const FILE_GC_GRACE_MS = 6 * 60 * 60_000;
/** How often shard 0's writer looks for chunks no stored file refers to. */
export const FILE_GC_INTERVAL_MS = 10 * 60_000;

/** Distinct terms of one document a search index keeps (the first ones in the text; the rest are not searchable). */
export const SEARCH_TERMS_PER_DOCUMENT_MAX = 1_024;
/** Characters of a search term (longer ones are cut): a term is a word, not a payload. */
export const SEARCH_TERM_CHARS_MAX = 64;
/** Terms of one search (`q.search(field, text)`): more is INVALID_ARGUMENT. */
export const SEARCH_QUERY_TERMS_MAX = 16;
/** Postings read per term of a search, most frequent first: how deep a common term is looked into. */
export const SEARCH_POSTINGS_PER_TERM_MAX = 1_024;
/** Results one search returns at most (take, collect). */
export const SEARCH_RESULTS_MAX = 1_024;

/** Offending documents a refused validator change names (the first ones found). */
export const SCHEMA_CHECK_OFFENDERS_MAX = 10;
