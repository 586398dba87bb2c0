/**
 * Scenario: file storage on a real node over a directory bucket (the app in
 * test/server/storageApp.ts), over real HTTP.
 *
 * - Upload through a URL from ctx.storage.generateUploadUrl(): files of 0 bytes, 1 byte,
 *   and across chunk boundaries come back identical, whole and in ranges (206 with
 *   Content-Range, suffix and open ranges, 416 past the end, If-Range, HEAD, 304); their
 *   metadata (SHA-256, size, type) and `_storage` document are what was sent.
 * - Actions store a Blob and read a file back.
 * - Bad input: a forged, altered or expired upload URL, no Content-Length, a file over the
 *   limit, a body shorter than declared (the client hangs up), an upload slower than
 *   allowed: each refused with its code, and no chunk is left in the bucket. A download of
 *   an id of another table or of no file is 404.
 * - Deletion: the URL answers 404 and getUrl null at once; the file collector deletes the
 *   chunks after its grace and the retention window, and never a file that is still
 *   stored however many passes run.
 * - Any node: a replica takes an upload URL the writer made (one signing key per
 *   deployment, kept in the bucket) and commits through the writer; both serve the file.
 */
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { FILE_CHUNK_BYTES } from "../../src/base/index.js";
import { SeededRandom } from "../../src/base/random.js";
import { globalsObject } from "../../src/manifest/index.js";
import { App } from "../../src/functions/App.js";
import * as storageApp from "./storageApp.js";
import { startSyncAppNode, startTestNode } from "./serverHarness.js";

const app = App.fromModule(storageApp, "storage test app");
const root = mkdtempSync(join(tmpdir(), "cairn-storage-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function value(url: string, kind: "query" | "mutation" | "action", path: string, args: Record<string, unknown>): Promise<unknown> {
  const answer = await fetch(`${url}api/${kind}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  const body = (await answer.json()) as { value?: unknown };
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(body)}`);
  return body.value;
}

async function upload(uploadUrl: string, body: Uint8Array, type = "application/x-test"): Promise<{ status: number; body: { storageId?: string; error?: { code: string } } }> {
  const answer = await fetch(uploadUrl, { method: "POST", headers: { "content-type": type }, body });
  return { status: answer.status, body: (await answer.json()) as { storageId?: string; error?: { code: string } } };
}

/** Chunk objects in the directory bucket (files/<upload>/<index>). */
function chunksIn(directory: string): string[] {
  const files = join(directory, "bucket", "files");
  if (!existsSync(files)) return [];
  return readdirSync(files, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function eventually(check: () => void | Promise<void>, timeout = 20_000): Promise<void> {
  return vi.waitFor(check, { timeout, interval: 50 });
}

/** A POST that declares `declared` bytes, sends `sent` of them and hangs up. */
function truncatedUpload(uploadUrl: string, declared: number, sent: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    const request = httpRequest(uploadUrl, { method: "POST", headers: { "content-length": declared, "content-type": "application/x-test" } });
    request.on("error", () => resolve());
    request.on("response", (response) => {
      response.resume();
      response.on("end", resolve);
    });
    request.write(sent, () => setTimeout(() => request.destroy(), 200));
  });
}

describe("file storage", () => {
  it("stores uploads and serves them back whole, in ranges and through actions, with their metadata", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const started = await startTestNode({ app, log: (line) => lines.push(line) }, { directory: join(root, "serve"), keepDirectory: true });
    const { url } = started.node;
    try {
      const sizes = [0, 1, FILE_CHUNK_BYTES - 1, FILE_CHUNK_BYTES, 2 * FILE_CHUNK_BYTES + 12_345];
      const stored: { id: string; bytes: Uint8Array }[] = [];
      for (const size of sizes) {
        const bytes = randomBytes(size);
        const answer = await upload((await value(url, "mutation", "files:uploadUrl", {})) as string, bytes);
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        const id = answer.body.storageId!;
        stored.push({ id, bytes });
        await value(url, "mutation", "files:attach", { name: `f${size}`, file: id });
        expect(await value(url, "query", "files:metadata", { id })).toEqual({ storageId: id, sha256: sha256(bytes), size, contentType: "application/x-test" });
        const fileUrl = (await value(url, "query", "files:url", { id })) as string;
        expect(fileUrl).toBe(`${url}api/storage/${id}`);
        const whole = await fetch(fileUrl);
        expect(whole.status).toBe(200);
        expect(whole.headers.get("content-type")).toBe("application/x-test");
        expect(whole.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
        expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);
      }
      const { id, bytes } = stored.at(-1)!;
      const fileUrl = `${url}api/storage/${id}`;
      const size = bytes.byteLength;
      const ranged = async (range: string, headers: Record<string, string> = {}) => fetch(fileUrl, { headers: { range, ...headers } });
      // Across a chunk boundary, a suffix, an open end, a range ending past the end.
      for (const [range, start, end] of [
        [`bytes=${FILE_CHUNK_BYTES - 10}-${FILE_CHUNK_BYTES + 9}`, FILE_CHUNK_BYTES - 10, FILE_CHUNK_BYTES + 9],
        ["bytes=-100", size - 100, size - 1],
        [`bytes=${2 * FILE_CHUNK_BYTES}-`, 2 * FILE_CHUNK_BYTES, size - 1],
        [`bytes=5-${size + 1_000}`, 5, size - 1],
        ["bytes=0-0", 0, 0],
      ] as const) {
        const answer = await ranged(range);
        expect(answer.status, range).toBe(206);
        expect(answer.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
        expect(Buffer.from(await answer.arrayBuffer()).equals(bytes.subarray(start, end + 1)), range).toBe(true);
      }
      const past = await ranged(`bytes=${size}-`);
      expect(past.status).toBe(416);
      expect(past.headers.get("content-range")).toBe(`bytes */${size}`);
      // If-Range with another ETag: the whole file.
      const whole = await ranged("bytes=0-9", { "if-range": '"other"' });
      expect(whole.status).toBe(200);
      expect((await whole.arrayBuffer()).byteLength).toBe(size);
      expect((await fetch(fileUrl, { headers: { "if-none-match": `"${sha256(bytes)}"` } })).status).toBe(304);
      const head = await fetch(fileUrl, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-length")).toBe(String(size));
      expect((await fetch(fileUrl, { method: "DELETE" })).status).toBe(405);
      const document = (await value(url, "query", "files:document", { id })) as Record<string, unknown>;
      expect(document).toMatchObject({ _id: id, sha256: sha256(bytes), size, contentType: "application/x-test" });

      // Actions store a Blob and read a file back.
      const fromAction = (await value(url, "action", "files:storeFromAction", { size: 300_000, type: "image/x-pattern" })) as { id: string; url: string };
      const pattern = new Uint8Array(300_000).map((_, index) => index % 251);
      expect(Buffer.from(await (await fetch(fromAction.url)).arrayBuffer()).equals(pattern)).toBe(true);
      expect(await value(url, "action", "files:readInAction", { id: fromAction.id })).toEqual({ size: 300_000, sum: pattern.reduce((sum, byte) => sum + byte, 0), type: "image/x-pattern" });

      // Not files: no id at all, an id of a deleted file.
      expect((await fetch(`${url}api/storage/not-an-id`)).status).toBe(400);
      await value(url, "action", "files:deleteInAction", { id: fromAction.id });
      expect((await fetch(fromAction.url)).status).toBe(404);
      expect(await value(url, "action", "files:readInAction", { id: fromAction.id })).toBeNull();
    } catch (error) {
      console.log(lines.join("\n"));
      throw error;
    } finally {
      await started.close();
    }
  });

  it("refuses bad uploads with their codes and keeps nothing of them", { timeout: 60_000 }, async () => {
    const directory = join(root, "refuse");
    const started = await startTestNode({ app, fileBytesMax: 3 * FILE_CHUNK_BYTES, fileCollector: { graceMs: 4_000, intervalMs: 60_000 } }, { directory, keepDirectory: true });
    const { url } = started.node;
    try {
      const good = (await value(url, "mutation", "files:uploadUrl", {})) as string;
      const refusals: [string, () => Promise<{ status: number; body: { error?: { code: string } } }>, number, string][] = [
        ["a forged signature", () => upload(good.replace(/signature=[0-9a-f]{4}/, "signature=0000"), randomBytes(10)), 400, "UPLOAD_INVALID"],
        ["a later expiry", () => upload(good.replace(/expires=(\d+)/, (_, ms: string) => `expires=${Number(ms) + 1}`), randomBytes(10)), 400, "UPLOAD_INVALID"],
        ["no signature", () => upload(`${url}api/storage/upload`, randomBytes(10)), 400, "UPLOAD_INVALID"],
        ["over the limit", () => upload(good, randomBytes(3 * FILE_CHUNK_BYTES + 1)), 413, "FILE_TOO_LARGE"],
      ];
      for (const [what, attempt, status, code] of refusals) {
        const answer = await attempt();
        expect(answer.status, what).toBe(status);
        expect(answer.body.error?.code, what).toBe(code);
      }
      // No Content-Length (a chunked body).
      const chunked = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(good, { method: "POST", headers: { "transfer-encoding": "chunked" } }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        request.on("error", reject);
        request.end(randomBytes(1_000));
      });
      expect(chunked).toBe(400);
      // Declares two chunks, sends one and a half, hangs up: the chunk written is deleted.
      await truncatedUpload(good, 2 * FILE_CHUNK_BYTES, randomBytes(FILE_CHUNK_BYTES + FILE_CHUNK_BYTES / 2));
      await eventually(() => expect(chunksIn(directory)).toEqual([]));
      // Slower than an upload may be (half the collector's 4 s grace): refused once it is over, nothing kept.
      const slow = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(good, { method: "POST", headers: { "content-length": 2 * FILE_CHUNK_BYTES } }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        request.on("error", reject);
        request.write(randomBytes(FILE_CHUNK_BYTES));
        setTimeout(() => request.end(randomBytes(FILE_CHUNK_BYTES)), 2_500);
      });
      expect(slow).toBe(400);
      await eventually(() => expect(chunksIn(directory)).toEqual([]));
      // A download of no file.
      const attached = (await upload(good, randomBytes(10))).body.storageId!;
      await value(url, "mutation", "files:remove", { id: attached });
      expect((await fetch(`${url}api/storage/${attached}`)).status).toBe(404);
      const removeAgain = await fetch(`${url}api/mutation`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "files:remove", args: { id: attached } }) });
      expect(((await removeAgain.json()) as { error: { code: string } }).error.code).toBe("FILE_NOT_FOUND");
    } finally {
      await started.close();
    }
  });

  it("collects the chunks of deleted files after the grace, and never a stored file's", { timeout: 60_000 }, async () => {
    const directory = join(root, "collect");
    const started = await startTestNode({ app, fileCollector: { graceMs: 2_000, intervalMs: 200 } }, { directory, keepDirectory: true });
    const { url } = started.node;
    try {
      const kept = randomBytes(FILE_CHUNK_BYTES + 5);
      const keptId = (await upload((await value(url, "mutation", "files:uploadUrl", {})) as string, kept)).body.storageId!;
      const dropped = (await upload((await value(url, "mutation", "files:uploadUrl", {})) as string, randomBytes(2 * FILE_CHUNK_BYTES + 5))).body.storageId!;
      expect(chunksIn(directory), chunksIn(directory).join("\n")).toHaveLength(5);
      const deletedAtMs = Date.now();
      await value(url, "mutation", "files:remove", { id: dropped });
      expect(await value(url, "query", "files:url", { id: dropped })).toBeNull();
      // The collector waits out the deployment's retention window too (7 days here: a
      // restore may go back to when the file existed), however many passes run…
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(chunksIn(directory)).toHaveLength(5);
      // …and once the window is shorter than the grace, the grace decides.
      await globalsObject(started.store, new SeededRandom(1)).update((current) => {
        const { version: _version, nonce: _nonce, ...fields } = current!;
        return { ...fields, retentionMs: 0 };
      });
      await eventually(() => expect(chunksIn(directory)).toHaveLength(2));
      // Not before the grace.
      expect(Date.now() - deletedAtMs).toBeGreaterThanOrEqual(2_000);
      // Many passes later the stored file is whole.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(chunksIn(directory)).toHaveLength(2);
      expect(Buffer.from(await (await fetch(`${url}api/storage/${keptId}`)).arrayBuffer()).equals(kept)).toBe(true);
    } finally {
      await started.close();
    }
  });

  it("takes uploads and serves files on a replica too: any node, one signing key", { timeout: 60_000 }, async () => {
    const directory = join(root, "replica");
    const adminKey = "storage-test-admin-key";
    const writer = await startSyncAppNode(directory, "writer", { app, adminKey });
    const follower = await startSyncAppNode(directory, "follower", { app, adminKey, role: "replica" });
    try {
      // A URL from the writer, uploaded to the follower (the document is committed through the writer).
      const fromWriter = (await value(writer.url, "mutation", "files:uploadUrl", {})) as string;
      const bytes = randomBytes(FILE_CHUNK_BYTES + 77);
      const answer = await upload(fromWriter.replace(writer.url, follower.url), bytes);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const id = answer.body.storageId!;
      // Served by either node, whole and in a range.
      for (const node of [follower, writer]) {
        await eventually(async () => expect((await fetch(`${node.url}api/storage/${id}`, { method: "HEAD" })).status).toBe(200));
        expect(Buffer.from(await (await fetch(`${node.url}api/storage/${id}`)).arrayBuffer()).equals(bytes)).toBe(true);
        const ranged = await fetch(`${node.url}api/storage/${id}`, { headers: { range: `bytes=${FILE_CHUNK_BYTES - 3}-${FILE_CHUNK_BYTES + 3}` } });
        expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(FILE_CHUNK_BYTES - 3, FILE_CHUNK_BYTES + 4))).toBe(true);
      }
      // A mutation on the follower runs on the writer (its URL names the writer): the follower takes it all the same.
      const viaFollower = (await value(follower.url, "mutation", "files:uploadUrl", {})) as string;
      const url = new URL(viaFollower);
      expect((await upload(`${follower.url}${url.pathname.slice(1)}${url.search}`, randomBytes(10))).status).toBe(200);
    } finally {
      await follower.stop();
      await writer.stop();
    }
  });
});
