import { mkdir } from "node:fs/promises";
import { type Clock, CairnError, STORE_OPEN_ATTEMPTS_MAX, type Random } from "../base/index.js";
import { errorCode } from "./FsKeyLocks.js";
import { FsObjectStore } from "./FsObjectStore.js";
import { InheritingObjectStore, PARENT_LINK_DEPTH_MAX, readParentLink } from "./InheritingObjectStore.js";
import { MemoryObjectStore } from "./MemoryObjectStore.js";
import type { ObjectStore } from "./ObjectStore.js";
import { invalidStoreUrl, parseStoreUrl, type StoreLocation } from "./parseStoreUrl.js";
import type { RetryPolicy } from "./retry.js";
import { S3ObjectStore, type IfMatchEtagForm, type S3ClientOverrides, type S3Credentials } from "./S3ObjectStore.js";

export interface OpenObjectStoreOptions {
  readonly clock?: Clock;
  readonly random?: Random;
  /** Where a plain relative path is resolved; the process's working directory by default. */
  readonly workingDirectory?: string;
  /** Environment read for the default S3 region; `process.env` by default. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  readonly s3?: {
    /** Explicit credentials instead of the standard AWS chain. */
    readonly credentials?: S3Credentials;
    readonly clientOverrides?: S3ClientOverrides;
    readonly retryPolicy?: RetryPolicy;
    /** Pins the If-Match etag form instead of learning it (see S3ObjectStoreOptions). */
    readonly ifMatchEtag?: IfMatchEtagForm;
  };
}

/**
 * Opens the store a URL names (see STORE_URL_FORMS): a directory (created if missing),
 * a named in-memory store, or an S3 bucket whose existence and permissions are checked
 * with one HeadBucket. Nothing is written to a bucket at open. A store with a parent link
 * (a branch's root, InheritingObjectStore) is opened as its view of itself and its parent.
 */
export async function openObjectStore(url: string, options: OpenObjectStoreOptions = {}): Promise<ObjectStore> {
  return openLinked(url, options, 0);
}

async function openLinked(url: string, options: OpenObjectStoreOptions, depth: number): Promise<ObjectStore> {
  const store = await openPlain(url, options);
  try {
    return await inheritParent(store, options, depth);
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** `store` as the view of itself and its parent when it has a parent link, else itself. */
export async function inheritParent(store: ObjectStore, options: OpenObjectStoreOptions = {}, depth = 0): Promise<ObjectStore> {
  const link = await readParentLink(store);
  if (link === null) return store;
  if (depth >= PARENT_LINK_DEPTH_MAX) {
    throw new CairnError("STORE_LINK_INVALID", `${store.description} links to parents more than ${PARENT_LINK_DEPTH_MAX} deep (a loop?)`, {
      details: { store: store.description },
    });
  }
  const parent = await openLinked(link.parentUrl, options, depth + 1);
  return new InheritingObjectStore(store, parent, link.ranges);
}

async function openPlain(url: string, options: OpenObjectStoreOptions): Promise<ObjectStore> {
  const location = parseStoreUrl(url, options.workingDirectory);
  switch (location.kind) {
    case "fs":
      await createDirectory(url, location.directory);
      return new FsObjectStore(location.directory, injected(options));
    case "memory":
      return new MemoryObjectStore(location.name);
    case "s3":
      return openS3(location, options);
  }
}

async function openS3(location: StoreLocation & { kind: "s3" }, options: OpenObjectStoreOptions): Promise<ObjectStore> {
  const environment = options.environment ?? process.env;
  const region = location.region ?? environment.AWS_REGION ?? environment.AWS_DEFAULT_REGION ?? "us-east-1";
  const store = new S3ObjectStore({
    bucket: location.bucket,
    prefix: location.prefix,
    region,
    ...(location.endpoint === undefined ? {} : { endpoint: location.endpoint }),
    ...(location.forcePathStyle === undefined ? {} : { forcePathStyle: location.forcePathStyle }),
    ...(location.checksums === undefined ? {} : { checksums: location.checksums }),
    ...injected(options),
    ...(options.s3?.credentials === undefined ? {} : { credentials: options.s3.credentials }),
    ...(options.s3?.clientOverrides === undefined ? {} : { clientOverrides: options.s3.clientOverrides }),
    ...(options.s3?.retryPolicy === undefined ? {} : { retryPolicy: options.s3.retryPolicy }),
    ...(options.s3?.ifMatchEtag === undefined ? {} : { ifMatchEtag: options.s3.ifMatchEtag }),
  });
  try {
    await store.checkBucket(STORE_OPEN_ATTEMPTS_MAX);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

async function createDirectory(url: string, directory: string): Promise<void> {
  try {
    await mkdir(directory, { recursive: true });
  } catch (error) {
    const code = errorCode(error);
    if (code === "EEXIST" || code === "ENOTDIR") throw invalidStoreUrl(url, `${directory} is not a directory`);
    if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
      throw new CairnError("STORE_ACCESS_DENIED", `cannot create the store directory ${directory} (${code})`, {
        cause: error,
        details: { url, directory },
      });
    }
    throw error;
  }
}

/** The injected clock and randomness, when given. */
function injected(options: OpenObjectStoreOptions): { clock?: Clock; random?: Random } {
  return {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.random === undefined ? {} : { random: options.random }),
  };
}
