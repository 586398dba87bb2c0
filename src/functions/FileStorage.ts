import { CairnError } from "../base/index.js";
import type { DocumentId, Value } from "../model/index.js";
import type { Catalog } from "./catalog.js";
import type { DatabaseReader, DatabaseWriter } from "./Database.js";
import { metadataOf, STORAGE_TABLE, storedFileOf, type FileMetadata } from "./storedFiles.js";

/**
 * `ctx.storage` (docs/functions.md#file-storage): files are `_storage` documents whose
 * bytes are objects of the deployment's bucket (storedFiles.ts). What a function may do:
 * - queries: `getUrl(id)`, `getMetadata(id)` — reads of the file's document, so a live
 *   query re-runs when the file is deleted;
 * - mutations: those, `generateUploadUrl()` (a signed URL a client POSTs the bytes to,
 *   answered `{ storageId }`) and `delete(id)` (in the mutation's commit; the bytes are
 *   collected later);
 * - actions: those, `store(blob)` and `get(id)` (the bytes as a Blob).
 * An id of another table is INVALID_ARGUMENT; `delete` of no file is FILE_NOT_FOUND.
 */
export interface StorageReader {
  /** A URL any node serves the file at (Range requests too), or null when there is no such file. */
  getUrl(id: DocumentId): Promise<string | null>;
  getMetadata(id: DocumentId): Promise<FileMetadata | null>;
}

export interface StorageWriter extends StorageReader {
  /** A URL to POST one file's bytes to within the hour; the answer is `{ storageId }`. */
  generateUploadUrl(): Promise<string>;
  delete(id: DocumentId): Promise<void>;
}

export interface StorageActionWriter extends StorageWriter {
  /** Stores `blob` (streamed to the bucket) and returns its storage id. */
  store(blob: Blob, options?: { readonly contentType?: string }): Promise<DocumentId>;
  /** The file's bytes, or null when there is no such file. */
  get(id: DocumentId): Promise<Blob | null>;
}

/** What the node provides for files (server/FileStore): signed URLs, and the bytes for actions. */
export interface FileService {
  uploadUrl(): string;
  fileUrl(id: DocumentId): string;
  store(blob: Blob, contentType: string | null): Promise<DocumentId>;
  read(id: DocumentId): Promise<Blob | null>;
}

export function queryStorage(db: DatabaseReader, files: FileService | null): StorageReader {
  const file = async (id: DocumentId) => {
    checkStorageId(db.catalog, id);
    const document = await db.get(id);
    return document === null ? null : storedFileOf(document);
  };
  return {
    getUrl: async (id) => ((await file(id)) === null ? null : service(files).fileUrl(id)),
    getMetadata: async (id) => {
      const found = await file(id);
      return found === null ? null : metadataOf(found);
    },
  };
}

export function mutationStorage(db: DatabaseWriter, files: FileService | null): StorageWriter {
  return {
    ...queryStorage(db, files),
    generateUploadUrl: async () => service(files).uploadUrl(),
    delete: async (id) => {
      checkStorageId(db.catalog, id);
      if ((await db.get(id)) === null) throw new CairnError("FILE_NOT_FOUND", `no stored file ${String(id)}`, { details: { id } });
      db.deleteSystem(id);
    },
  };
}

export function actionStorage(
  files: FileService | null,
  runQuery: (path: string, args: Record<string, Value>) => Promise<Value>,
  runMutation: (path: string, args: Record<string, Value>) => Promise<Value>,
): StorageActionWriter {
  const metadata = async (id: DocumentId) => (await runQuery("_system:fileMetadata", { id })) as unknown as FileMetadata | null;
  return {
    getUrl: async (id) => ((await metadata(id)) === null ? null : service(files).fileUrl(id)),
    getMetadata: metadata,
    generateUploadUrl: async () => service(files).uploadUrl(),
    delete: async (id) => {
      await runMutation("_system:deleteFile", { id });
    },
    store: async (blob, options = {}) => {
      if (!(blob instanceof Blob)) throw new CairnError("INVALID_ARGUMENT", "storage.store takes a Blob");
      const contentType = options.contentType ?? (blob.type === "" ? null : blob.type);
      return service(files).store(blob, contentType);
    },
    get: (id) => service(files).read(id),
  };
}

/** INVALID_ARGUMENT unless `id` is an id of `_storage` (DOCUMENT_ID_INVALID for no id at all). */
export function checkStorageId(catalog: Catalog, id: unknown): void {
  const { table } = catalog.tableOfId(id);
  if (table.name !== STORAGE_TABLE) throw new CairnError("INVALID_ARGUMENT", `${String(id)} is a document of ${table.name}, not a stored file`, { details: { id } });
}

function service(files: FileService | null): FileService {
  if (files === null) throw new CairnError("FILE_STORAGE_UNAVAILABLE", "file storage is served by a node (cairn serve, cairn dev); this runtime has none");
  return files;
}
