import type { DocumentId } from "../model/index.js";
import type { DocumentObject } from "./documents.js";
import { ROUTED_BY_ID } from "./scheduledFunctions.js";
import { defineTable, type TableDefinition } from "./schema.js";
import { v } from "./values.js";

/**
 * File storage's system table, `_storage`: one document per stored file, its id the
 * file's storage id. The bytes are objects of the deployment's bucket under
 * `files/<upload>/<index>`, `chunkBytes` each (the last one shorter), written once by the
 * upload that created the document and never changed: a file is immutable, so its URL
 * can be cached forever, and a deleted document leaves objects no document refers to,
 * which the file collector (server/FileCollector) deletes after a grace period.
 *
 * Routed by id like the scheduler's table: a file stored through an upload or an action
 * lives on shard 0 (the zero route); a mutation deletes it from there.
 */
export const STORAGE_TABLE = "_storage";

export function storageTable(): TableDefinition {
  const table = defineTable({
    /** SHA-256 of the whole file, lowercase hex. */
    sha256: v.string(),
    size: v.number(),
    contentType: v.optional(v.string()),
    /** The upload's id: its chunks are `files/<upload>/<index>`. */
    upload: v.string(),
    chunkBytes: v.number(),
  }).index("by_upload", ["upload"]);
  table.shardKeyField = ROUTED_BY_ID;
  return table;
}

export interface StoredFile {
  readonly _id: DocumentId;
  readonly _creationTime: number;
  readonly sha256: string;
  readonly size: number;
  readonly contentType?: string;
  readonly upload: string;
  readonly chunkBytes: number;
}

/** What `ctx.storage.getMetadata` answers. */
export interface FileMetadata {
  readonly storageId: DocumentId;
  readonly sha256: string;
  readonly size: number;
  readonly contentType: string | null;
}

export function storedFileOf(document: DocumentObject): StoredFile {
  return document as unknown as StoredFile;
}

export function metadataOf(file: StoredFile): FileMetadata {
  return { storageId: file._id, sha256: file.sha256, size: file.size, contentType: file.contentType ?? null };
}

/** The bucket key of chunk `index` of upload `upload`. */
export function fileChunkKey(upload: string, index: number): string {
  return `files/${upload}/${String(index).padStart(6, "0")}`;
}

export const FILE_CHUNKS_PREFIX = "files/";
