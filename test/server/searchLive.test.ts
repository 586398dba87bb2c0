/**
 * Scenario: a live full-text search, end to end. A real writer node runs the search app
 * (test/functions/searchApp.ts); real clients (the Node client library over `ws`)
 * subscribe to `messages:search` {text: "alpha", channel: "general"}. Then, one write at a
 * time:
 *
 * - writes that must change the result — inserting a general message with "alpha",
 *   editing a general message into "alpha", deleting a matching message, editing a
 *   matching message out of "alpha" — each reach both subscribers, and the result they
 *   show is what a fresh `messages:search` over HTTP returns;
 * - writes that must not re-run the search — an "alpha" message in another channel, a
 *   general message without "alpha", an edit of a non-matching general message that stays
 *   non-matching — deliver nothing and make the server run the subscription not once;
 * - a following matching write proves the pipeline still flows, and ranking arrives live:
 *   "alpha alpha alpha" becomes the first result.
 *
 * Every result each client delivered is recorded in order and compared, at the end, with
 * the fresh HTTP results taken after each write. No timing is asserted.
 */
import { describe, expect, it, vi } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { App } from "../../src/functions/App.js";
import type { RunningNode } from "../../src/server/startNode.js";
import * as searchApp from "../functions/searchApp.js";
import { startTestNode } from "./serverHarness.js";

const api = apiOf<typeof searchApp.functions>();
const app = App.fromModule(searchApp, "search app");
const SEARCH = { text: "alpha", channel: "general" } as const;
/** Bounded waits: generous for a loaded CI machine, polled every 20 ms; never a timing assertion. */
const WAIT = { timeout: 20_000, interval: 20 } as const;

function client(url: string): CairnClient {
  return createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 200, onError: () => undefined });
}

/** A fresh run of the search over HTTP (POST /api/query: no sync session, no shared run). */
async function freshSearch(node: RunningNode): Promise<string[]> {
  const response = await fetch(`${node.url}api/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "messages:search", args: SEARCH }) });
  expect(response.status).toBe(200);
  return ((await response.json()) as { value: string[] }).value;
}

/**
 * How many times the node's sync sessions asked to run a subscribed query: every
 * `Session.runAt` of a runnable query goes through `SharedQueryRuns.run`, which counts a
 * miss (it executes the query) or a hit (it reuses another session's run at the same ts).
 * Their sum is therefore every (re-)run of every subscription on the node, whether or not
 * its result changed — a client cannot see a re-run whose result hash is unchanged (the
 * session sends QueryUpdated only when the hash differs, and the client also drops equal
 * results), so counting deliveries alone could not tell "not re-run" from "re-run, same
 * answer". The HTTP queries of this test do not go through the sync handler, and the only
 * subscriptions on the node are the two clients' search, so the counter grows exactly
 * when the search subscription is re-run.
 */
function subscriptionRuns(node: RunningNode): number {
  const { sharedRunHits, sharedRunMisses } = node.handler.stats();
  return sharedRunHits + sharedRunMisses;
}

describe("a live search subscription against a real node", () => {
  it("re-runs exactly for writes that touch its terms under its filters, and shows the new ranking", async () => {
    const started = await startTestNode({ app });
    const node = started.node;
    // `user` subscribes and makes every write; `watcher` only subscribes.
    const user = client(node.url);
    const watcher = client(node.url);
    try {
      const send = (body: string, channel = "general") => user.mutation(api.messages.send, { channel, author: "ann", body });
      // Before subscribing: two matching messages, three that do not match.
      const launch = await send("alpha launch notes");
      const retro = await send("alpha retro");
      const release = await send("beta release plan");
      const weekly = await send("weekly sync");
      await send("alpha elsewhere", "random");

      const userSeen: string[][] = [];
      const watcherSeen: string[][] = [];
      user.subscribe(api.messages.search, SEARCH, (value) => userSeen.push(value));
      watcher.subscribe(api.messages.search, SEARCH, (value) => watcherSeen.push(value));
      /** The fresh HTTP result after each step: what both clients must have delivered, in order. */
      const expected: string[][] = [];

      /** Waits until both subscriptions show what a fresh search returns (polled), and returns it. */
      const converged = async (): Promise<string[]> => {
        const fresh = await vi.waitFor(async () => {
          const now = await freshSearch(node);
          expect(userSeen.at(-1)).toEqual(now);
          expect(watcherSeen.at(-1)).toEqual(now);
          return now;
        }, WAIT);
        expected.push(fresh);
        return fresh;
      };
      const sorted = (bodies: readonly string[]) => [...bodies].sort();

      expect(sorted(await converged())).toEqual(["alpha launch notes", "alpha retro"]);
      expect(userSeen).toHaveLength(1);
      expect(watcherSeen).toHaveLength(1);

      /**
       * A write the search must see. The user's mutation resolves only once its session
       * sent a Transition at or past the commit's ts, which that session sends after
       * running every one of its subscriptions the commit touched; the watcher's session
       * re-runs too, and `converged` waits for its delivery. So when this returns, every
       * run the write caused has been counted: exactly one per subscribed session.
       */
      const mustChange = async (write: () => Promise<unknown>): Promise<string[]> => {
        const runsBefore = subscriptionRuns(node);
        const deliveredBefore = [userSeen.length, watcherSeen.length];
        await write();
        const result = await converged();
        expect([userSeen.length, watcherSeen.length]).toEqual([deliveredBefore[0]! + 1, deliveredBefore[1]! + 1]);
        expect(subscriptionRuns(node) - runsBefore).toBe(2);
        return result;
      };

      /**
       * A write the search must not see. When the user's mutation resolves, its session has
       * processed the commit (see mustChange): a re-run of its search would already be
       * counted. Neither client may have delivered anything, and no session may have run
       * the search; the data must not have changed what a fresh search returns either.
       */
      const mustNotRerun = async (write: () => Promise<unknown>): Promise<void> => {
        const runsBefore = subscriptionRuns(node);
        const deliveredBefore = [userSeen.length, watcherSeen.length];
        const freshBefore = await freshSearch(node);
        await write();
        expect(subscriptionRuns(node)).toBe(runsBefore);
        expect([userSeen.length, watcherSeen.length]).toEqual(deliveredBefore);
        expect(await freshSearch(node)).toEqual(freshBefore);
        expect(userSeen.at(-1)).toEqual(freshBefore);
      };

      // Writes that must change the result, one at a time.
      expect(sorted(await mustChange(() => send("alpha kickoff")))).toEqual(["alpha kickoff", "alpha launch notes", "alpha retro"]);
      expect(sorted(await mustChange(() => user.mutation(api.messages.edit, { id: release, body: "alpha beta release plan" })))).toEqual([
        "alpha beta release plan",
        "alpha kickoff",
        "alpha launch notes",
        "alpha retro",
      ]);
      expect(sorted(await mustChange(() => user.mutation(api.messages.remove, { id: launch })))).toEqual(["alpha beta release plan", "alpha kickoff", "alpha retro"]);
      expect(sorted(await mustChange(() => user.mutation(api.messages.edit, { id: retro, body: "retro done" })))).toEqual(["alpha beta release plan", "alpha kickoff"]);

      // Writes that must not re-run it.
      await mustNotRerun(() => send("alpha again, but elsewhere", "random"));
      await mustNotRerun(() => send("nothing to see here"));
      await mustNotRerun(() => user.mutation(api.messages.edit, { id: weekly, body: "weekly sync moved to friday" }));

      // The pipeline still flows, and the ranking arrives live: more occurrences rank first.
      const ranked = await mustChange(() => send("alpha alpha alpha"));
      expect(ranked[0]).toBe("alpha alpha alpha");
      expect(sorted(ranked)).toEqual(["alpha alpha alpha", "alpha beta release plan", "alpha kickoff"]);

      // Every result each client delivered, in order: exactly one per step that changed it.
      expect(userSeen).toEqual(expected);
      expect(watcherSeen).toEqual(expected);
      expect(expected).toHaveLength(6);
    } finally {
      await Promise.all([user.close(), watcher.close()]);
      await started.close();
    }
  });
});
