import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { apiOf } from "../../src/client/index.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { createNodeClient } from "../../src/client/node.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { throttled, type Progress } from "../kit/progress.js";
import type { functions } from "./platformBenchApp.js";
import type { PlatformNode } from "./PlatformNode.js";
import { documentBody, ZipfVocabulary } from "./searchCorpus.js";

const api = apiOf<typeof functions>();

export interface SearchPlan {
  readonly documents: number;
  readonly vocabulary: number;
  readonly zipfExponent: number;
  readonly wordsMin: number;
  readonly wordsMax: number;
  readonly channels: number;
  readonly batch: number;
  readonly batchesInFlight: number;
  readonly searches: number;
  readonly warmupSearches: number;
  readonly liveWrites: number;
  readonly liveWarmups: number;
}

/** Which words a search takes, and whether it filters by channel. */
export interface SearchClass {
  readonly name: string;
  readonly terms: "common" | "rare";
  readonly filtered: boolean;
}

export interface SearchClassFigures extends SearchClass {
  readonly latency: LatencySummary;
  /** Results per search (at most the `take(10)`), on average. */
  readonly meanResults: number;
}

export interface SearchFigures {
  readonly plan: SearchPlan;
  readonly fill: { readonly seconds: number; readonly documentsPerSecond: number; readonly words: number; readonly bodyBytes: number };
  readonly queries: readonly SearchClassFigures[];
  readonly allQueries: LatencySummary;
  readonly live: {
    readonly term: string;
    readonly channel: string;
    /** Documents the search matched before the writes (at most 10 shown). */
    readonly initialResults: number;
    /** The writer's mutation: send → its answer. */
    readonly commit: LatencySummary;
    /** The writer's send → the subscriber's new result with the document. */
    readonly update: LatencySummary;
  };
  readonly bucket: { readonly objects: number; readonly bytes: number };
}

/** Common terms: ranks 1–100; rare terms: ranks 2,001–5,000 (a few to a few dozen documents each at 100k documents). */
const COMMON_RANKS = [0, 100] as const;
const RARE_RANKS = [2_000, 5_000] as const;
export const SEARCH_CLASSES: readonly SearchClass[] = [
  { name: "common terms", terms: "common", filtered: false },
  { name: "common terms + channel", terms: "common", filtered: true },
  { name: "rare terms", terms: "rare", filtered: false },
  { name: "rare terms + channel", terms: "rare", filtered: true },
];
/** The live search: a rare word (rank 4,000) in one channel. */
const LIVE_RANK = 3_999;
const LIVE_CHANNEL = "c0";
const UPDATE_WAIT_MS = 30_000;
const PROGRESS_INTERVAL_MS = 5_000;

/**
 * Phase 3: full-text search at `documents` documents.
 *
 * 1. Fill: documents of `wordsMin`–`wordsMax` words drawn from a Zipf vocabulary, each in
 *    one of `channels` channels, inserted through `search:addMany` over HTTP, `batch` a
 *    mutation, `batchesInFlight` mutations at a time.
 * 2. Queries: `searches` runs of `search:search` (take 10) over HTTP (POST /api/query), one
 *    at a time, after `warmupSearches` unmeasured ones; each of 1–3 terms, common or rare,
 *    with or without a channel filter, the four classes in turn.
 * 3. Live: a subscriber (the real client, createNodeClient) subscribes to a search for a
 *    rare word in one channel; another client then makes `liveWrites` writes (after
 *    `liveWarmups`), one at a time, each adding a document with that word and a marker of
 *    its own, ranked first (shorter than the corpus's, newest among equals): measured
 *    from the writer's send to the subscriber's result holding the marker.
 */
export async function measureSearch(node: PlatformNode, plan: SearchPlan, progress: Progress): Promise<SearchFigures> {
  const vocabulary = new ZipfVocabulary(plan.vocabulary, plan.zipfExponent);
  const random = new SeededRandom(3);
  progress(`   inserting ${plan.documents.toLocaleString("en-US")} documents, ${plan.batch} a mutation, ${plan.batchesInFlight} mutations in flight…`);
  await node.latency(false);
  const fill = await fillDocuments(node, plan, vocabulary, random, progress);
  await node.latency(true);
  progress(`   ${fill.documentsPerSecond.toLocaleString("en-US")} documents/s; ${plan.searches} searches over HTTP…`);
  const queries = await runQueries(node, plan, vocabulary, random);
  progress(`   live: ${plan.liveWrites} writes that each change a subscribed search…`);
  const live = await measureLive(node, plan, vocabulary);
  return {
    plan,
    fill,
    queries: queries.classes,
    allQueries: queries.all,
    live,
    bucket: await node.bucketSize(),
  };
}

async function fillDocuments(node: PlatformNode, plan: SearchPlan, vocabulary: ZipfVocabulary, random: SeededRandom, progress: Progress): Promise<SearchFigures["fill"]> {
  const soFar = throttled(progress, PROGRESS_INTERVAL_MS);
  const started = performance.now();
  let words = 0;
  let bodyBytes = 0;
  let inserted = 0;
  let nextBatch = 0;
  const batches = Math.ceil(plan.documents / plan.batch);
  const makeBatch = (index: number) =>
    Array.from({ length: Math.min(plan.batch, plan.documents - index * plan.batch) }, () => {
      const body = documentBody(vocabulary, random, plan.wordsMin, plan.wordsMax);
      words += body.split(" ").length;
      bodyBytes += body.length;
      return { channel: `c${randomInt(random, plan.channels)}`, body };
    });
  await Promise.all(
    Array.from({ length: plan.batchesInFlight }, async () => {
      for (let index = nextBatch++; index < batches; index = nextBatch++) {
        const docs = makeBatch(index);
        await node.call("mutation", "search:addMany", { docs });
        inserted += docs.length;
        soFar(`   ${inserted.toLocaleString("en-US")} documents inserted (${Math.round(inserted / ((performance.now() - started) / 1000)).toLocaleString("en-US")}/s)…`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds: round(seconds, 1), documentsPerSecond: Math.round(plan.documents / seconds), words, bodyBytes };
}

async function runQueries(node: PlatformNode, plan: SearchPlan, vocabulary: ZipfVocabulary, random: SeededRandom): Promise<{ classes: SearchClassFigures[]; all: LatencySummary }> {
  const argsOf = (kind: SearchClass) => {
    const terms = 1 + randomInt(random, 3);
    const [from, to] = kind.terms === "common" ? COMMON_RANKS : RARE_RANKS;
    const text = Array.from({ length: terms }, () => vocabulary.ofRank(random, from, to)).join(" ");
    return kind.filtered ? { text, channel: `c${randomInt(random, plan.channels)}` } : { text };
  };
  for (let n = 0; n < plan.warmupSearches; n++) await node.call("query", "search:search", argsOf(SEARCH_CLASSES[n % SEARCH_CLASSES.length]!));
  const samples = SEARCH_CLASSES.map(() => ({ ms: [] as number[], results: 0 }));
  for (let n = 0; n < plan.searches; n++) {
    const index = n % SEARCH_CLASSES.length;
    const args = argsOf(SEARCH_CLASSES[index]!);
    const started = performance.now();
    const results = (await node.call("query", "search:search", args)) as string[];
    samples[index]!.ms.push(performance.now() - started);
    samples[index]!.results += results.length;
  }
  return {
    classes: SEARCH_CLASSES.map((kind, index) => ({
      ...kind,
      latency: summarizeLatencies(samples[index]!.ms),
      meanResults: round(samples[index]!.results / Math.max(1, samples[index]!.ms.length), 1),
    })),
    all: summarizeLatencies(samples.flatMap((sample) => sample.ms)),
  };
}

async function measureLive(node: PlatformNode, plan: SearchPlan, vocabulary: ZipfVocabulary): Promise<SearchFigures["live"]> {
  const term = vocabulary.words[LIVE_RANK]!;
  const errors: unknown[] = [];
  const clientOf = () => createNodeClient(node.syncUrl, { onError: (error) => errors.push(error) });
  const subscriber = clientOf();
  const writer = clientOf();
  let waiting: { readonly marker: string; readonly resolve: (atMs: number) => void } | null = null;
  let first: ((results: readonly string[]) => void) | null = null;
  const initial = new Promise<readonly string[]>((resolve) => (first = resolve));
  const unsubscribe = subscriber.subscribe(api.search.search, { text: term, channel: LIVE_CHANNEL }, (results) => {
    const atMs = performance.now();
    first?.(results);
    first = null;
    if (waiting !== null && results.some((body) => body.endsWith(` ${waiting!.marker}`))) {
      waiting.resolve(atMs);
      waiting = null;
    }
  });
  try {
    const initialResults = (await withTimeout(initial, "the live search's first result")).length;
    const commitMs: number[] = [];
    const updateMs: number[] = [];
    for (let n = 0; n < plan.liveWarmups + plan.liveWrites; n++) {
      const marker = `live${n}`;
      const arrived = new Promise<number>((resolve) => (waiting = { marker, resolve }));
      const sent = performance.now();
      await writer.mutation(api.search.add, { channel: LIVE_CHANNEL, body: `${term} ${marker}` });
      const committed = performance.now();
      const updated = await withTimeout(arrived, `the subscriber's result with write ${n}`);
      if (n < plan.liveWarmups) continue;
      commitMs.push(committed - sent);
      updateMs.push(updated - sent);
    }
    if (errors.length > 0) throw new CairnError("INTERNAL", `the live search's clients reported ${errors.length} error(s); the first: ${String(errors[0])}`);
    return { term, channel: LIVE_CHANNEL, initialResults, commit: summarizeLatencies(commitMs), update: summarizeLatencies(updateMs) };
  } finally {
    unsubscribe();
    await Promise.all([closeClient(subscriber), closeClient(writer)]);
  }
}

async function closeClient(client: CairnClient): Promise<void> {
  await client.close().catch(() => undefined);
}

async function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CairnError("INTERNAL", `${what} did not arrive within ${UPDATE_WAIT_MS / 1000} s`)), UPDATE_WAIT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
