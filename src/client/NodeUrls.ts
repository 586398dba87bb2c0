import { invalidArgument } from "../base/index.js";
import type { Random } from "./Random.js";

/**
 * The sync URLs a client may connect to — the nodes of one deployment, or one URL behind
 * a load balancer — and which of them the next connection attempt goes to.
 *
 * The client connects to one URL at a time. After any failure (a refused upgrade: 503 at
 * session capacity or while stopping; an unreachable node; a session the node ended, as
 * REPLICA_BEHIND or SERVER_STOPPING; a dropped connection) the next attempt goes to the
 * next URL in the list, round robin. So a URL that refused is never the next attempt
 * while the list has another, and is tried again only after every other one was. A
 * browser cannot tell a 503 from an unreachable host (both are a close with code 1006),
 * so every failure counts as a refusal.
 *
 * The first URL is drawn at random, so that many clients given the same list spread over
 * its nodes rather than all starting on the first. A single URL draws nothing: a
 * one-URL client takes the same random values as before lists existed.
 *
 * A cycle is one try of every URL: the reconnect backoff grows per cycle, not per attempt
 * (see `cycleOf`).
 */
export class NodeUrls {
  readonly urls: readonly string[];
  private index: number;

  constructor(urls: string | readonly string[], random: Random) {
    this.urls = checkNodeUrls(urls);
    this.index = this.urls.length === 1 ? 0 : Math.min(this.urls.length - 1, Math.floor(random.float() * this.urls.length));
  }

  /** The URL of the current connection, or of the next attempt while waiting for it. */
  get current(): string {
    return this.urls[this.index]!;
  }

  /** Moves to the next URL (round robin) after a failure; returns it. */
  advance(): string {
    this.index = (this.index + 1) % this.urls.length;
    return this.current;
  }

  /**
   * The cycle a reconnect attempt belongs to: attempts 0 … n−1 after a lost connection
   * try each of the n URLs once, and wait the first backoff step; the next n the second.
   * Per cycle rather than per attempt because then each node sees from each client the
   * attempts a one-URL client makes today (one per backoff step), while a client whose
   * node died reaches a live one after one short delay, however many dead nodes precede
   * it in the list — not after a delay that doubled at each of them.
   */
  cycleOf(attempt: number): number {
    return Math.floor(attempt / this.urls.length);
  }
}

/**
 * The URLs as given, once checked: at least one, each an absolute ws:// or wss:// URL
 * (the sync endpoint, e.g. `wss://host/api/sync`) without a fragment, no two the
 * same. INVALID_ARGUMENT
 * otherwise, naming the URL at fault.
 */
export function checkNodeUrls(urls: string | readonly string[]): readonly string[] {
  const list: readonly unknown[] = typeof urls === "string" ? [urls] : Array.isArray(urls) ? urls : [urls];
  if (list.length === 0) throw invalidArgument("a client needs at least one URL to connect to");
  const seen = new Map<string, string>();
  for (const url of list) {
    const normalized = checkNodeUrl(url);
    const earlier = seen.get(normalized);
    if (earlier !== undefined) {
      throw invalidArgument(`the URL ${JSON.stringify(url)} is listed twice (as ${JSON.stringify(earlier)}): each node once`, { url });
    }
    seen.set(normalized, url as string);
  }
  return [...list] as string[];
}

/** The URL in normal form (so "ws://a:80/x" and "ws://A/x" are one), or INVALID_ARGUMENT. */
function checkNodeUrl(url: unknown): string {
  if (typeof url !== "string") throw invalidArgument(`a URL is a string, not ${url === null ? "null" : typeof url}`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidArgument(`not a URL: ${JSON.stringify(url)}`, { url });
  }
  if (parsed.protocol === "http:" || parsed.protocol === "https:") {
    const scheme = parsed.protocol === "https:" ? "wss" : "ws";
    throw invalidArgument(`a Cairn URL is ws:// or wss://, not ${parsed.protocol}// (the sync endpoint: ${scheme}://${parsed.host}/api/sync)`, { url });
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") throw invalidArgument(`a Cairn URL is ws:// or wss://, not ${parsed.protocol}//`, { url });
  // A WebSocket refuses a URL with a fragment at every attempt: refuse it once, here.
  if (parsed.hash !== "") throw invalidArgument(`a Cairn URL has no fragment: ${JSON.stringify(url)}`, { url });
  return parsed.href;
}
