import { performance } from "node:perf_hooks";
import type { Random } from "../../src/base/random.js";
import { summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { BenchSocket } from "../syncSupport/BenchSocket.js";

/** Characters a document body is drawn from (one byte each in JSON). */
const BODY_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
/** A stored value besides its body: `{"writer":"w0","n":123456,"body":"","_creationTime":1765000000000.123}`. */
const VALUE_OVERHEAD_BYTES = JSON.stringify({ writer: "w0", n: 123_456, body: "", _creationTime: 1_765_000_000_000.123 }).length;

export interface DocumentLoadFigures {
  readonly writers: number;
  readonly mutations: number;
  readonly seconds: number;
  readonly mutationsPerSecond: number;
  /** Send → MutationResponse. */
  readonly commit: LatencySummary;
  /** The stored JSON value of each document (its 16-byte id aside). */
  readonly documentBytes: number;
}

/**
 * Closed-loop writers on a writer node: each a raw sync-protocol socket that inserts one
 * document (`documents:insert`) and, once it is acknowledged (and the Transition owed to
 * it is in), the next. Group commit gathers whatever is pending into each segment.
 *
 * Lifecycle: opened → running (start) → stopped (stop resolves once every writer's last
 * mutation settled; nothing is left in flight).
 */
export class DocumentLoad {
  private running = false;
  private loops: Promise<void>[] = [];
  private latenciesMs: number[] = [];
  private startedMs = 0;
  private readonly bodyChars: number;

  private constructor(
    private readonly sockets: readonly BenchSocket[],
    private readonly random: Random,
    documentBytes: number,
  ) {
    this.bodyChars = Math.max(1, documentBytes - VALUE_OVERHEAD_BYTES);
  }

  static async open(syncUrl: string, writers: number, documentBytes: number, random: Random): Promise<DocumentLoad> {
    const sockets: BenchSocket[] = [];
    try {
      for (let index = 0; index < writers; index++) sockets.push(await BenchSocket.connect(syncUrl));
    } catch (error) {
      await Promise.all(sockets.map((socket) => socket.close()));
      throw error;
    }
    return new DocumentLoad(sockets, random, documentBytes);
  }

  /** Mutations acknowledged so far. */
  get mutations(): number {
    return this.latenciesMs.length;
  }

  start(): void {
    this.running = true;
    this.startedMs = performance.now();
    this.loops = this.sockets.map((socket, index) => this.writerLoop(socket, index));
  }

  async stop(): Promise<DocumentLoadFigures> {
    this.running = false;
    await Promise.all(this.loops);
    const seconds = (performance.now() - this.startedMs) / 1000;
    return {
      writers: this.sockets.length,
      mutations: this.latenciesMs.length,
      seconds: Math.round(seconds * 10) / 10,
      mutationsPerSecond: Math.round((this.latenciesMs.length / seconds) * 10) / 10,
      commit: summarizeLatencies(this.latenciesMs),
      documentBytes: VALUE_OVERHEAD_BYTES + this.bodyChars,
    };
  }

  async close(): Promise<void> {
    this.running = false;
    await Promise.allSettled(this.loops);
    await Promise.all(this.sockets.map((socket) => socket.close()));
  }

  private async writerLoop(socket: BenchSocket, index: number): Promise<void> {
    for (let n = 0; this.running; n++) {
      const mutation = socket.mutate("documents:insert", { writer: `w${index}`, n, body: this.body() });
      const [response] = await Promise.all([mutation.response, mutation.settled]);
      this.latenciesMs.push(response.atMs - mutation.sentMs);
    }
  }

  private body(): string {
    let text = "";
    for (let at = 0; at < this.bodyChars; at++) text += BODY_ALPHABET[Math.floor(this.random.float() * BODY_ALPHABET.length)];
    return text;
  }
}
