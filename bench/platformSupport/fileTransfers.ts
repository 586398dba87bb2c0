import { createHash, randomBytes } from "node:crypto";
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { performance } from "node:perf_hooks";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { CairnError } from "../../src/base/errors.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { peakRssBytes, resetPeakRss, watchPeakRss } from "../kit/peakRss.js";
import type { Progress } from "../kit/progress.js";
import type { PlatformNode } from "./PlatformNode.js";
import { drained } from "../../src/base/index.js";

const MIB = 2 ** 20;
/** The files are this piece of random bytes over and over (the last one cut): no side ever holds a whole file. */
const PIECE_BYTES = MIB;

/** What is done with one size of file. */
export interface FilePlan {
  readonly sizeMiB: number;
  readonly uploads: number;
  readonly downloads: number;
  readonly ranges: number;
  readonly rangeBytes: number;
}

export interface TransferFigures {
  readonly count: number;
  readonly bytes: number;
  readonly seconds: number;
  /** Decimal megabytes a second, transfers one after another. */
  readonly mbPerSecond: number;
  /** Per transfer, request sent → last byte. */
  readonly latency: LatencySummary;
}

export interface FileSizeFigures {
  readonly plan: FilePlan;
  readonly upload: TransferFigures;
  readonly download: TransferFigures;
  readonly range: TransferFigures;
}

export interface FileFigures {
  readonly sizes: readonly FileSizeFigures[];
  /** The node's RSS when the phase began (its VmHWM reset there), and its VmHWM over the phase. */
  readonly rssAtStartMiB: number | null;
  readonly peakRssMiB: number;
  /** False where the kernel refused the reset: the peak then runs from the node's start. */
  readonly peakResetForPhase: boolean;
  readonly bucket: { readonly objects: number; readonly bytes: number };
}

/**
 * Phase 2: file storage over HTTP, one transfer at a time. For each size: `uploads` files
 * POSTed to an upload URL from `files:uploadUrl`, streamed with `http.request` and their
 * Content-Length (a piece at a time, with backpressure); `downloads` whole GETs of the
 * first, streamed and compared with the bytes sent as they arrive (and its ETag with
 * their SHA-256); `ranges` GETs of `rangeBytes` at random offsets (`Range: bytes=a-b`,
 * answered 206), compared likewise. The node's VmHWM is reset at the start of the phase
 * and watched throughout (kit/peakRss.ts).
 */
export async function measureFileTransfers(node: PlatformNode, plans: readonly FilePlan[], progress: Progress): Promise<FileFigures> {
  const piece = randomBytes(PIECE_BYTES);
  const random = new SeededRandom(2);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const peakResetForPhase = resetPeakRss(node.pid);
  const rssAtStart = peakRssBytes(node.pid);
  const peak = watchPeakRss(node.pid);
  const sizes: FileSizeFigures[] = [];
  try {
    for (const plan of plans) {
      const size = plan.sizeMiB * MIB;
      const sha256 = sha256Of(piece, size);
      progress(`   ${plan.sizeMiB} MiB: ${plan.uploads} upload(s), ${plan.downloads} whole download(s), ${plan.ranges} range(s) of ${round(plan.rangeBytes / 1024, 0)} KiB…`);
      const uploads: Measured[] = [];
      let storageId = "";
      for (let n = 0; n < plan.uploads; n++) {
        const url = (await node.call("mutation", "files:uploadUrl", {})) as string;
        const upload = await uploadFile(agent, url, piece, size);
        uploads.push(upload);
        if (n === 0) storageId = upload.storageId;
      }
      const fileUrl = `${node.url}api/storage/${storageId}`;
      const downloads: Measured[] = [];
      for (let n = 0; n < plan.downloads; n++) {
        const download = await downloadBytes(agent, fileUrl, piece, 0, size - 1, false);
        if (download.etag !== `"${sha256}"`) throw new CairnError("INTERNAL", `the ${plan.sizeMiB} MiB file's ETag is ${download.etag}, not the SHA-256 of the bytes sent ("${sha256}")`);
        downloads.push(download);
      }
      const ranges: Measured[] = [];
      for (let n = 0; n < plan.ranges; n++) {
        const start = randomInt(random, size - plan.rangeBytes + 1);
        ranges.push(await downloadBytes(agent, fileUrl, piece, start, start + plan.rangeBytes - 1, true));
      }
      sizes.push({ plan, upload: transfers(uploads), download: transfers(downloads), range: transfers(ranges) });
    }
  } finally {
    agent.destroy();
  }
  const peakBytes = peak.stop();
  return {
    sizes,
    rssAtStartMiB: rssAtStart === null ? null : round(rssAtStart / MIB, 0),
    peakRssMiB: round(peakBytes / MIB, 0),
    peakResetForPhase,
    bucket: await node.bucketSize(),
  };
}

interface Measured {
  readonly bytes: number;
  readonly ms: number;
}

function transfers(measured: readonly Measured[]): TransferFigures {
  const bytes = measured.reduce((sum, one) => sum + one.bytes, 0);
  const ms = measured.reduce((sum, one) => sum + one.ms, 0);
  return {
    count: measured.length,
    bytes,
    seconds: round(ms / 1000, 3),
    mbPerSecond: round(bytes / 1e6 / (ms / 1000), 1),
    latency: summarizeLatencies(measured.map((one) => one.ms)),
  };
}

/** SHA-256 of the file of `size` bytes made of `piece` repeated. */
function sha256Of(piece: Buffer, size: number): string {
  const hash = createHash("sha256");
  for (let offset = 0; offset < size; offset += piece.byteLength) hash.update(piece.subarray(0, Math.min(piece.byteLength, size - offset)));
  return hash.digest("hex");
}

/** POSTs `size` bytes of `piece` repeated, a piece at a time with backpressure; the storage id and how long it took. */
function uploadFile(agent: Agent, url: string, piece: Buffer, size: number): Promise<Measured & { storageId: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = httpRequest(url, { method: "POST", agent, headers: { "content-length": size, "content-type": "application/octet-stream" } });
    request.on("error", reject);
    request.on("response", (response) => {
      void readAll(response).then((body) => {
        if (response.statusCode !== 200) return reject(new CairnError("INTERNAL", `an upload of ${size} bytes answered ${response.statusCode}: ${body}`));
        resolve({ bytes: size, ms: performance.now() - started, storageId: (JSON.parse(body) as { storageId: string }).storageId });
      }, reject);
    });
    void (async () => {
      for (let offset = 0; offset < size; offset += piece.byteLength) {
        if (request.destroyed) return;
        if (!request.write(piece.subarray(0, Math.min(piece.byteLength, size - offset)))) await drained(request);
      }
      request.end();
    })();
  });
}

/** GETs bytes `start`–`end` (the whole file unless `ranged`), checking each byte against the file's as it streams in. */
function downloadBytes(agent: Agent, url: string, piece: Buffer, start: number, end: number, ranged: boolean): Promise<Measured & { etag: string | undefined }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = httpRequest(url, { method: "GET", agent, headers: ranged ? { range: `bytes=${start}-${end}` } : {} });
    request.on("error", reject);
    request.on("response", (response) => {
      const expectedStatus = ranged ? 206 : 200;
      if (response.statusCode !== expectedStatus) {
        void readAll(response).then((body) => reject(new CairnError("INTERNAL", `GET ${ranged ? `bytes=${start}-${end}` : "whole"} answered ${response.statusCode}, not ${expectedStatus}: ${body}`)), reject);
        return;
      }
      let offset = start;
      response.on("data", (chunk: Buffer) => {
        if (!matches(piece, offset, chunk)) {
          response.destroy();
          reject(new CairnError("INTERNAL", `downloaded bytes at ${offset}–${offset + chunk.byteLength - 1} differ from those uploaded`));
          return;
        }
        offset += chunk.byteLength;
      });
      response.on("error", reject);
      response.on("end", () => {
        if (offset !== end + 1) return reject(new CairnError("INTERNAL", `GET of bytes ${start}–${end} ended at ${offset}`));
        resolve({ bytes: end - start + 1, ms: performance.now() - started, etag: response.headers.etag });
      });
    });
    request.end();
  });
}

/** Whether `chunk` is the file's bytes at `offset` (the file is `piece` over and over). */
function matches(piece: Buffer, offset: number, chunk: Buffer): boolean {
  let at = 0;
  while (at < chunk.byteLength) {
    const inPiece = (offset + at) % piece.byteLength;
    const length = Math.min(piece.byteLength - inPiece, chunk.byteLength - at);
    if (piece.compare(chunk, at, at + length, inPiece, inPiece + length) !== 0) return false;
    at += length;
  }
  return true;
}

function readAll(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    response.on("data", (part: Buffer) => parts.push(part));
    response.on("end", () => resolve(Buffer.concat(parts).toString()));
    response.on("error", reject);
  });
}
