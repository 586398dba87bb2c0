import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { link, mkdir, open, readdir, rename, rmdir, stat, unlink, type FileHandle } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import {
  systemClock,
  type Clock,
  CairnError,
  ERROR_CODES,
  FS_DELETE_CONCURRENCY_MAX,
  FS_PARENT_RETRIES_MAX,
  FS_TEMPORARY_STALE_MS,
  randomHex,
  systemRandom,
  type Random,
} from "../base/index.js";
import { FsKeyLocks, errorCode, unlinkIfPresent } from "./FsKeyLocks.js";
import { directoryComponentsForPrefix, keyForPathComponents, pathComponentsForKey } from "./fsKeyPaths.js";
import { assertValidKey, compareKeys } from "./keys.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";

/**
 * A directory used as a bucket, safe for several processes on one machine.
 *
 * Invariants:
 * - Each object is one file (named by fsKeyPaths) holding a header line
 *   `cairn1 <md5 hex>\n` and then the body; the etag is the MD5 of the body, as on S3.
 *   `list` reads only the header, never the body.
 * - A file appears complete or not at all: it is written to `<root>/.tmp`, fsynced, then
 *   moved into place (`link` for create, `rename` for casPut), and the directory is
 *   fsynced. A reader holds one open file descriptor, so it sees one version.
 * - `create` is `link()`, which fails atomically with EEXIST when the key exists, in
 *   any process. `casPut` and `delete` run under the key's lock (FsKeyLocks), so an
 *   etag check and the write that depends on it cannot interleave with another writer's.
 *   `create` needs no lock: no locked step ever makes an absent key present.
 * - Visible is not durable. Once a directory fsync fails after a link, rename or unlink
 *   made a write visible, the store is failed: that call throws STORE_AMBIGUOUS_OUTCOME
 *   and every later call throws STORE_FAILED, so no read-back can find the write and
 *   take it as durable (a read still in flight throws STORE_FAILED too, a write still in
 *   flight STORE_AMBIGUOUS_OUTCOME). After a failed fsync the page cache no longer
 *   matches the disk and a retried fsync may succeed without persisting anything (as
 *   PostgreSQL learnt in 2018), so only a restarted process, after the disk is checked,
 *   may use the directory again. A failed fsync of a temporary file made nothing visible
 *   and fails only its own call.
 * - `delete` prunes directories left empty; writers re-create a parent that vanished
 *   between their mkdir and their link/rename (bounded by FS_PARENT_RETRIES_MAX).
 * - Every failure is a CairnError: file-system errors are mapped by `typed`, and one that
 *   happens after a write became visible (a directory fsync) is STORE_AMBIGUOUS_OUTCOME
 *   and fails the store (`makeDurable`).
 */

const HEADER_PREFIX = "cairn1 ";
const HEADER_BYTES = HEADER_PREFIX.length + 32 + 1;
const HEADER_PATTERN = /^cairn1 ([0-9a-f]{32})\n$/;
const TEMPORARY_DIRECTORY = ".tmp";
const LOCKS_DIRECTORY = ".locks";
const TEMPORARY_NAME_BYTES = 12;

export interface FsObjectStoreOptions {
  readonly clock?: Clock;
  readonly random?: Random;
  /**
   * fsyncs a directory, so that the names linked, renamed or unlinked in it survive a
   * crash. Defaults to the real fsync; tests inject a failing one, since a healthy disk
   * cannot be made to fail an fsync on demand.
   */
  readonly syncDirectory?: (directory: string) => Promise<void>;
  /**
   * Test seam, never set in production: awaited by casPut with the key's lock held,
   * after the etag check and `assertHeld`, immediately before the rename that commits the
   * write. It is the one point where a paused holder is exposed to a lock breaker (the
   * lost-update scenario), and a hook there changes no step of the protocol; it must not
   * call the store.
   */
  readonly beforeCasRename?: (key: string) => Promise<void>;
}

/** Why a failed store refuses further use: the first write that could not be made durable. */
interface StoreFailure {
  readonly key: string;
  readonly cause: unknown;
}

export class FsObjectStore implements ObjectStore {
  readonly description: string;
  private readonly root: string;
  private readonly temporaryDirectory: string;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly locks: FsKeyLocks;
  private readonly syncDirectory: (directory: string) => Promise<void>;
  private readonly beforeCasRename: (key: string) => Promise<void>;
  private sweep: Promise<void> | undefined;
  private failure: StoreFailure | undefined;

  /** Uses `rootDirectory` (created if missing) as the bucket. */
  constructor(rootDirectory: string, options: FsObjectStoreOptions = {}) {
    this.root = resolve(rootDirectory);
    this.description = pathToFileURL(this.root).href;
    this.temporaryDirectory = join(this.root, TEMPORARY_DIRECTORY);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? systemRandom;
    this.syncDirectory = options.syncDirectory ?? fsyncDirectory;
    this.beforeCasRename = options.beforeCasRename ?? (async () => undefined);
    const locksDirectory = join(this.root, LOCKS_DIRECTORY);
    mkdirSync(this.temporaryDirectory, { recursive: true });
    mkdirSync(locksDirectory, { recursive: true });
    this.locks = new FsKeyLocks(locksDirectory, this.temporaryDirectory, this.clock, this.random);
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null | "not-modified"> {
    assertValidKey(key);
    return this.reading("get", key, async () => {
      const handle = await openIfPresent(this.pathFor(key));
      if (handle === null) return null;
      try {
        const etag = await readHeaderEtag(handle, key);
        if (options.ifNoneMatch !== undefined && options.ifNoneMatch === etag) return "not-modified";
        const body = await readBody(handle);
        if (md5Hex(body) !== etag) {
          throw new CairnError("STORE_OBJECT_INVALID", `object file of ${key} does not match its etag`, {
            details: { key, etag },
          });
        }
        return { body, etag };
      } finally {
        await handle.close();
      }
    });
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    assertValidKey(key);
    const path = this.pathFor(key);
    return this.writing("create", key, async () => {
      const { temporaryPath, etag } = await this.writeTemporary(body);
      try {
        await this.placeWithParents(key, path, async () => {
          try {
            await link(temporaryPath, path);
          } catch (error) {
            if (errorCode(error) === "EEXIST") throw casConflict(key, "key exists");
            throw error;
          }
        });
        return { etag };
      } finally {
        await unlinkIfPresent(temporaryPath);
      }
    });
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    assertValidKey(key);
    const path = this.pathFor(key);
    return this.writing("casPut", key, async () => {
      const written = await this.writeTemporary(body);
      try {
        await this.locks.withLock(key, async (lock) => {
          const current = await this.etagAt(path, key);
          if (current === null) throw casConflict(key, "key is missing");
          if (current !== etag) throw casConflict(key, "etag differs");
          await lock.assertHeld();
          await this.beforeCasRename(key);
          // The key exists and only a locked delete removes it, so its directory stays.
          await rename(written.temporaryPath, path);
          await this.makeDurable(key, () => this.syncDirectory(dirname(path)));
        });
        return { etag: written.etag };
      } finally {
        await unlinkIfPresent(written.temporaryPath);
      }
    });
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    const path = this.pathFor(key);
    await this.writing("delete", key, async () => {
      const removed = await this.locks.withLock(key, async () => {
        try {
          await unlink(path);
        } catch (error) {
          if (errorCode(error) === "ENOENT") return false;
          throw error;
        }
        await this.makeDurable(key, () => this.syncExistingDirectory(dirname(path)));
        return true;
      });
      if (removed) await this.pruneEmptyDirectories(dirname(path));
    });
  }

  /** Deletes every key (missing keys included); reports the keys that failed, if any. */
  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertValidKey(key);
    this.assertNotFailed();
    const failures: { key: string; message: string }[] = [];
    let firstError: unknown;
    for (let start = 0; start < keys.length; start += FS_DELETE_CONCURRENCY_MAX) {
      const batch = keys.slice(start, start + FS_DELETE_CONCURRENCY_MAX);
      const outcomes = await Promise.allSettled(batch.map((key) => this.delete(key)));
      outcomes.forEach((outcome, index) => {
        if (outcome.status === "fulfilled") return;
        firstError ??= outcome.reason;
        failures.push({ key: batch[index] as string, message: String(outcome.reason) });
      });
    }
    this.assertNotFailed();
    if (failures.length > 0) {
      throw new CairnError("STORE_REQUEST_FAILED", `deleting ${failures.length} of ${keys.length} keys failed`, {
        cause: firstError,
        details: { failures },
      });
    }
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<ListEntry> {
    const keys = (await this.reading("list", prefix, () => this.keysUnder(prefix)))
      .filter((key) => key.startsWith(prefix))
      .filter((key) => options.startAfter === undefined || compareKeys(key, options.startAfter) > 0)
      .sort(compareKeys);
    for (const key of keys) {
      const entry = await this.reading("list", key, () => this.entryFor(key));
      if (entry !== null) yield entry;
    }
  }

  async close(): Promise<void> {
    await this.sweep;
  }

  /**
   * Runs a read (mapping file-system errors) only while the store has not failed, and
   * refuses its result if the store failed while it ran: a read that finishes after the
   * failure could hand out a write that is visible but not durable.
   */
  private async reading<T>(operation: string, key: string, action: () => Promise<T>): Promise<T> {
    this.assertNotFailed();
    const result = await typed(operation, key, action);
    this.assertNotFailed();
    return result;
  }

  /**
   * Runs a write (mapping file-system errors) only while the store has not failed. A
   * write that completed while another call failed the store is visible, but its own
   * fsync cannot be trusted any more, so it is ambiguous rather than acknowledged.
   */
  private async writing<T>(operation: string, key: string, action: () => Promise<T>): Promise<T> {
    this.assertNotFailed();
    const result = await typed(operation, key, action);
    if (this.failure !== undefined) {
      throw new CairnError(
        "STORE_AMBIGUOUS_OUTCOME",
        `the ${operation} of ${key} completed, but the directory store at ${this.root} failed while it was in ` +
          `flight (fsync after writing ${this.failure.key} failed), so it cannot be promised durable`,
        { cause: this.failure.cause, details: { key, root: this.root } },
      );
    }
    return result;
  }

  private assertNotFailed(): void {
    if (this.failure === undefined) return;
    const { key, cause } = this.failure;
    throw new CairnError(
      "STORE_FAILED",
      `the directory store at ${this.root} could not make a write durable (fsync after writing ${key} failed: ` +
        `${messageOf(cause)}) and refuses further use: after a failed fsync the page cache can no longer be ` +
        `trusted and a retried fsync may succeed without persisting anything; check the disk, then restart the process`,
      { cause, details: { root: this.root, key } },
    );
  }

  /**
   * Runs a step that follows the link/rename/unlink which made a write visible (a
   * directory fsync). If it fails the write may survive a crash or not, so it must never
   * be taken as durable: the call is ambiguous and the store fails, which stops a
   * read-back through this instance from finding the write.
   */
  private async makeDurable(key: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.failure ??= { key, cause: error };
      throw new CairnError(
        "STORE_AMBIGUOUS_OUTCOME",
        `the write of ${key} is visible but making it durable failed (${messageOf(error)}); ` +
          `the directory store at ${this.root} now refuses further use (STORE_FAILED) until the process restarts`,
        { cause: error, details: { key, root: this.root } },
      );
    }
  }

  private pathFor(key: string): string {
    return join(this.root, ...pathComponentsForKey(key));
  }

  /** Writes `body` to a fresh fsynced temporary file. */
  private async writeTemporary(body: Uint8Array): Promise<{ temporaryPath: string; etag: string }> {
    // Housekeeping must never fail a write; a sweep that failed runs again at the next open.
    this.sweep ??= this.sweepStaleTemporaryFiles().catch(() => undefined);
    const etag = md5Hex(body);
    const temporaryPath = join(this.temporaryDirectory, `object-${randomHex(this.random, TEMPORARY_NAME_BYTES)}`);
    const handle = await open(temporaryPath, "wx");
    try {
      await handle.writeFile(Buffer.concat([Buffer.from(`${HEADER_PREFIX}${etag}\n`, "latin1"), body]));
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { temporaryPath, etag };
  }

  /**
   * Creates the parents of `path` and runs `place` (a link or rename into them), again
   * if a concurrent delete pruned a parent in between; then makes it all durable.
   */
  private async placeWithParents(key: string, path: string, place: () => Promise<void>): Promise<void> {
    const parent = dirname(path);
    for (let attempt = 1; ; attempt++) {
      let firstCreated: string | undefined;
      try {
        firstCreated = await mkdir(parent, { recursive: true });
        await place();
      } catch (error) {
        if (errorCode(error) === "ENOENT" && attempt < FS_PARENT_RETRIES_MAX) continue;
        throw error;
      }
      await this.makeDurable(key, () => this.fsyncNewDirectories(firstCreated, parent));
      return;
    }
  }

  /** fsyncs `parent` and, when mkdir created directories, each of their parents. */
  private async fsyncNewDirectories(firstCreated: string | undefined, parent: string): Promise<void> {
    const directories = [parent];
    if (firstCreated !== undefined) {
      for (let directory = parent; directory !== dirname(firstCreated); directory = dirname(directory)) {
        directories.push(dirname(directory));
      }
    }
    for (const directory of directories) await this.syncDirectory(directory);
  }

  private async etagAt(path: string, key: string): Promise<string | null> {
    const handle = await openIfPresent(path);
    if (handle === null) return null;
    try {
      return await readHeaderEtag(handle, key);
    } finally {
      await handle.close();
    }
  }

  private async entryFor(key: string): Promise<ListEntry | null> {
    const handle = await openIfPresent(this.pathFor(key));
    if (handle === null) return null;
    try {
      const etag = await readHeaderEtag(handle, key);
      const { size } = await handle.stat();
      return { key, etag, size: size - HEADER_BYTES };
    } finally {
      await handle.close();
    }
  }

  /** Every key stored under the directories that `prefix` names, unsorted. */
  private async keysUnder(prefix: string): Promise<string[]> {
    const objectPaths: string[][] = [];
    await this.collectObjectPaths(directoryComponentsForPrefix(prefix), objectPaths);
    return objectPaths.map(keyForPathComponents).filter((key): key is string => key !== null);
  }

  /** Appends the components of every file below `components` (skipping hidden names). */
  private async collectObjectPaths(components: string[], objectPaths: string[][]): Promise<void> {
    for (const entry of await readDirectoryIfPresent(join(this.root, ...components))) {
      if (entry.name.startsWith(".")) continue;
      if (entry.isDirectory()) await this.collectObjectPaths([...components, entry.name], objectPaths);
      else if (entry.isFile()) objectPaths.push([...components, entry.name]);
    }
  }

  /**
   * fsyncs `directory` after an unlink in it — or, when a concurrent delete of its last
   * other key already removed it (pruneEmptyDirectories), its nearest existing ancestor,
   * which makes that removal durable and with it the unlink (the directory is gone, so the
   * name cannot come back). Without this, two deletes racing in one directory failed the
   * whole store on the fsync's ENOENT.
   */
  private async syncExistingDirectory(directory: string): Promise<void> {
    for (let current = directory; ; current = dirname(current)) {
      try {
        await this.syncDirectory(current);
        return;
      } catch (error) {
        if (errorCode(error) !== "ENOENT" || current === this.root || !current.startsWith(this.root + sep)) throw error;
      }
    }
  }

  /** Removes `directory` and its ancestors while they are empty, never the root. */
  private async pruneEmptyDirectories(directory: string): Promise<void> {
    for (let current = directory; current !== this.root && current.startsWith(this.root + sep); current = dirname(current)) {
      try {
        await rmdir(current);
      } catch (error) {
        const code = errorCode(error);
        if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOENT") return;
        throw error;
      }
    }
  }

  /** Removes temporary files that a crashed writer left behind (once per store). */
  private async sweepStaleTemporaryFiles(): Promise<void> {
    const nowMs = this.clock.nowMs();
    for (const entry of await readDirectoryIfPresent(this.temporaryDirectory)) {
      const path = join(this.temporaryDirectory, entry.name);
      try {
        const { mtimeMs } = await stat(path);
        if (nowMs - mtimeMs > FS_TEMPORARY_STALE_MS) await unlinkIfPresent(path);
      } catch (error) {
        if (errorCode(error) !== "ENOENT") throw error;
      }
    }
  }
}

async function openIfPresent(path: string): Promise<FileHandle | null> {
  try {
    return await open(path, "r");
  } catch (error) {
    // ENOTDIR: a foreign file sits where one of the key's directories would be.
    if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return null;
    throw error;
  }
}

async function readHeaderEtag(handle: FileHandle, key: string): Promise<string> {
  const header = Buffer.alloc(HEADER_BYTES);
  const { bytesRead } = await handle.read(header, 0, HEADER_BYTES, 0);
  const match = HEADER_PATTERN.exec(header.subarray(0, bytesRead).toString("latin1"));
  if (match === null) {
    throw new CairnError("STORE_OBJECT_INVALID", `object file of ${key} has no valid header`, { details: { key } });
  }
  return match[1] as string;
}

async function readBody(handle: FileHandle): Promise<Uint8Array> {
  const { size } = await handle.stat();
  const body = new Uint8Array(Math.max(0, size - HEADER_BYTES));
  let offset = 0;
  while (offset < body.byteLength) {
    const { bytesRead } = await handle.read(body, offset, body.byteLength - offset, HEADER_BYTES + offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return offset === body.byteLength ? body : body.subarray(0, offset);
}

async function readDirectoryIfPresent(directory: string) {
  try {
    return await readdir(directory, { withFileTypes: true });
  } catch (error) {
    if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return [];
    throw error;
  }
}

async function fsyncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function md5Hex(body: Uint8Array): string {
  return createHash("md5").update(body).digest("hex");
}

/** File-system errors Cairn can name; anything else is STORE_REQUEST_FAILED. */
const ACCESS_DENIED_CODES = new Set(["EACCES", "EPERM", "EROFS"]);
const TRANSIENT_CODES = new Set(["ENOSPC", "EDQUOT", "EMFILE", "ENFILE", "EBUSY", "EAGAIN", "EINTR"]);

/** Runs `action`, turning Node's file-system errors into CairnErrors (CairnErrors pass). */
async function typed<T>(operation: string, key: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    const code = errorCode(error);
    if (code === undefined || code in ERROR_CODES) throw error;
    const message = `${operation} ${key} on a directory store failed: ${(error as Error).message}`;
    if (ACCESS_DENIED_CODES.has(code)) throw new CairnError("STORE_ACCESS_DENIED", message, { cause: error, details: { key } });
    if (TRANSIENT_CODES.has(code)) throw new CairnError("STORE_TRANSIENT", message, { cause: error, details: { key } });
    throw new CairnError("STORE_REQUEST_FAILED", message, { cause: error, details: { key } });
  }
}

/** The message of a Node error (read structurally, like every error in Cairn). */
function messageOf(error: unknown): string {
  const message = typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined;
  return typeof message === "string" ? message : String(error);
}

function casConflict(key: string, reason: string): CairnError {
  return new CairnError("CAS_CONFLICT", `conditional write to ${key} lost: ${reason}`, { details: { key } });
}
