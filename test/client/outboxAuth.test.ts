/**
 * Scenarios: a client process with a file outbox, signed in as user x with HS256 tokens
 * against a real node that verifies them, is SIGKILLed with mutations it never sent (the
 * relay in front of the node is cut); a new client over the same outbox is the reload.
 * The node's log lines record who wrote them (`ctx.auth`'s subject).
 * - The reloaded client sends the anonymous mutation at once, holds x's (and a mutation
 *   made after them) until x's token is accepted — not on a forged token claiming x —
 *   then sends them in order, each applied once, under x.
 * - A reload signed in as y sends nothing of x's, also after reconnecting, and reports
 *   them once (OUTBOX_IDENTITY_MISMATCH), even the one the node applied under x whose
 *   answer was lost; a later reload as x applies them once (the applied one answered from
 *   its receipt); y's mutation left behind is discarded, and no later reload sees it.
 * - A mutation made anonymously while offline, whose process then got x's token, goes out
 *   under x once the node accepted it: the outbox records it as x's before it is sent. The
 *   node applies it under x and the process is killed before the answer; a reload as x
 *   sends it as x and it is answered from x's receipt (applied once), nothing reported.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { functionReference } from "../../src/client/api.js";
import type { CairnClient, CairnClientOptions } from "../../src/client/CairnClient.js";
import { fileOutbox } from "../../src/client/node.js";
import { decodeOutboxRecord } from "../../src/client/OutboxRecord.js";
import { App } from "../../src/functions/App.js";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import { startTestNode } from "../server/serverHarness.js";
import * as outboxAuthApp from "./outboxAuthApp.js";
import { mutationSeqs, openRecordingClient, startOutboxChild, until } from "./outboxHarness.js";
import { OutboxRelay } from "./outboxRelay.js";

const append = functionReference<"mutation", { name: string; line: string }, null>("log:append");
const lines = functionReference<"query", { name: string }, string[]>("log:lines");

const SECRET = "0123456789abcdef0123456789abcdef-outbox";
const ISSUER = "https://auth.example";
const X = { kind: "user", issuer: ISSUER, subject: "x" } as const;
const Y = { kind: "user", issuer: ISSUER, subject: "y" } as const;

function sign(subject: string, secret = SECRET): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(subject).setIssuer(ISSUER).setIssuedAt().setExpirationTime("10m").sign(new TextEncoder().encode(secret));
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A node verifying HS256 tokens of SECRET, a relay in front of it, a direct client to read the logs, and an outbox path. */
async function setup() {
  const started = await startTestNode({ app: App.fromModule(outboxAuthApp, "outbox auth test app"), verifier: jwtVerifier({ secret: SECRET, issuer: ISSUER }) });
  cleanups.push(() => started.close());
  const nodeUrl = `${started.node.url.replace(/^http/, "ws")}api/sync`;
  const relay = await OutboxRelay.start(nodeUrl);
  cleanups.push(() => relay.close());
  const directory = mkdtempSync(join(tmpdir(), "cairn-outbox-auth-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  const reader = open(nodeUrl);
  let reads = 0;
  return {
    relay,
    directory,
    outboxPath: join(directory, "outbox"),
    /** The log's lines, read fresh (a new subscription each time, never a cached result). */
    log: async (name: string) => {
      const [result] = await Promise.all([reader.client.query(lines, { name }), reader.client.query(lines, { name: `unused-${++reads}` })]);
      return result;
    },
  };
}

/** A client whose sent frames and reported errors are recorded; closed after the test. */
function open(url: string, options: Omit<CairnClientOptions, "WebSocket" | "onError"> = {}) {
  const opened = openRecordingClient(url, options, cleanups);
  let roundTrips = 0;
  return {
    ...opened,
    /** Resolves after a query's answer came back on this client's connection: whatever it was to send by then was sent. */
    roundTrip: () => opened.client.query(lines, { name: `round-trip-${++roundTrips}` }),
  };
}


const pendingOf = (client: CairnClient) => client.pendingMutations().map(({ seq, state, issuedAs }) => ({ seq, state, issuedAs }));

describe("a restored outbox and the identity its mutations were issued as", () => {
  it("sends anonymous mutations at once and a user's only once that user's token is accepted, in the order they were made", async () => {
    const { relay, outboxPath, directory, log } = await setup();
    const child = startChild(relay.url, outboxPath, directory);
    await child.line("connected");
    relay.cut();
    child.send("append doc a1");
    await child.line("saved 1");
    child.send(`auth ${await sign("x")}`);
    await child.line("auth-set");
    child.send("append doc x2");
    child.send("append doc x3");
    await child.line("saved 3");
    await child.kill();
    expect(decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test").mutations.map((mutation) => mutation.issuedAs)).toEqual([{ kind: "anonymous" }, X, X]);

    relay.restore();
    const reloaded = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(async () => (await log("doc")).length === 1 && reloaded.client.pendingMutations().length === 2, "the anonymous mutation applied");
    expect(await log("doc")).toEqual(["anonymous:a1"]);
    expect(pendingOf(reloaded.client)).toEqual([
      { seq: 2, state: "waitingForAuth", issuedAs: X },
      { seq: 3, state: "waitingForAuth", issuedAs: X },
    ]);
    // A mutation made now waits behind x's: it never overtakes them.
    const later = reloaded.client.mutation(append, { name: "doc", line: "later" });
    await until(() => reloaded.client.pendingMutations().some((mutation) => mutation.seq === 4 && mutation.state === "sending"), "the later mutation saved");
    await reloaded.roundTrip();
    expect(mutationSeqs(reloaded.sent)).toEqual([1]);

    // A token that claims x but is not signed with the node's secret: refused, and nothing goes out anonymously.
    await expect(reloaded.client.setAuth(await sign("x", "another-secret-of-enough-length-000000"))).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    await reloaded.roundTrip();
    expect(mutationSeqs(reloaded.sent)).toEqual([1]);
    expect(await log("doc")).toEqual(["anonymous:a1"]);

    expect(await reloaded.client.setAuth(await sign("x"))).toBe("x");
    expect(await later).toBeNull();
    await until(() => reloaded.client.pendingMutations().length === 0, "everything settled");
    // x's mutations ran under x, once each, and the later one after them (on the session, which is x's now).
    expect(await log("doc")).toEqual(["anonymous:a1", "x:x2", "x:x3", "x:later"]);
    expect(mutationSeqs(reloaded.sent)).toEqual([1, 2, 3, 4]);
    expect(reloaded.errors).toEqual([]);
  });

  it("never sends a user's mutations as another user: reports them once, applies them once under their user later, and discards what the app drops for good", async () => {
    const { relay, outboxPath, directory, log } = await setup();
    const child = startChild(relay.url, outboxPath, directory);
    await child.line("connected");
    child.send(`auth ${await sign("x")}`);
    await child.line("auth x");
    // The node applies "one" under x; its answer never reaches the process. "two" never leaves it.
    relay.muteReplies();
    child.send("append doc one");
    await until(async () => (await log("doc")).length === 1, "the node applied the first mutation");
    relay.cut();
    child.send("append doc two");
    await child.line("saved 2");
    await child.kill();
    relay.restore();

    // Reload signed in as y.
    const asY = open(relay.url, { outbox: fileOutbox(outboxPath) });
    expect(await asY.client.setAuth(await sign("y"))).toBe("y");
    await until(() => asY.errors.length > 0, "the mismatch reported");
    expect(asY.errors).toEqual([
      expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", kind: "InvalidInput", details: expect.objectContaining({ seqs: [1, 2], issuedAs: [X, X], signedInAs: Y }) }),
    ]);
    const fromY = asY.client.mutation(append, { name: "doc", line: "from-y" }).catch((error: unknown) => error);
    await until(() => asY.client.pendingMutations().some((mutation) => mutation.seq === 3 && mutation.state === "sending"), "y's mutation saved");
    await asY.roundTrip();
    // Reconnecting changes nothing: the new session is y's again, and nothing is reported twice.
    const connects = () => asY.sent.filter((frame) => frame.type === "Connect").length;
    relay.cut();
    relay.restore();
    await until(() => connects() === 2 && asY.client.connectionState.state === "connected", "reconnected");
    await asY.roundTrip();
    expect(pendingOf(asY.client)).toEqual([
      { seq: 1, state: "waitingForAuth", issuedAs: X },
      { seq: 2, state: "waitingForAuth", issuedAs: X },
      { seq: 3, state: "sending", issuedAs: Y },
    ]);
    expect(mutationSeqs(asY.sent)).toEqual([]);
    expect(asY.errors).toHaveLength(1);
    expect(await log("doc")).toEqual(["x:one"]);
    await asY.client.close();
    expect(await fromY).toMatchObject({ code: "CONNECTION_LOST" });

    // Reload signed in as x: x's go (the applied one answered from its receipt), y's is held and reported.
    const asX = open(relay.url, { outbox: fileOutbox(outboxPath) });
    expect(await asX.client.setAuth(await sign("x"))).toBe("x");
    await until(() => asX.client.pendingMutations().length === 1, "x's mutations settled");
    expect(await log("doc")).toEqual(["x:one", "x:two"]);
    expect(mutationSeqs(asX.sent)).toEqual([1, 2]);
    expect(pendingOf(asX.client)).toEqual([{ seq: 3, state: "waitingForAuth", issuedAs: Y }]);
    expect(asX.errors).toEqual([expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", details: expect.objectContaining({ seqs: [3], signedInAs: X }) })]);
    const dropped = await asX.client.discardPendingMutations((mutation) => mutation.issuedAs.kind === "user" && mutation.issuedAs.subject === "y");
    expect(dropped.map(({ seq, path }) => ({ seq, path }))).toEqual([{ seq: 3, path: "log:append" }]);
    expect(asX.client.pendingMutations()).toEqual([]);
    expect(existsSync(outboxPath)).toBe(false);
    await asX.client.close();

    // Reload signed in as y again: nothing is left to send, nothing to report.
    const again = open(relay.url, { outbox: fileOutbox(outboxPath) });
    expect(await again.client.setAuth(await sign("y"))).toBe("y");
    await again.roundTrip();
    expect(again.client.pendingMutations()).toEqual([]);
    expect(mutationSeqs(again.sent)).toEqual([]);
    expect(again.errors).toEqual([]);
    expect(await log("doc")).toEqual(["x:one", "x:two"]);
  });
});

describe("a mutation made before the token arrived", () => {
  it("is recorded as the identity it went out under, so a reload as that user is answered from its receipt", async () => {
    const { relay, outboxPath, directory, log } = await setup();
    const child = startChild(relay.url, outboxPath, directory);
    await child.line("connected");
    relay.cut();
    child.send("append doc early");
    await child.line("saved 1");
    expect(decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test").mutations.map((mutation) => mutation.issuedAs)).toEqual([{ kind: "anonymous" }]);
    // The token arrives while offline; back online, the node applies the mutation but its answer is lost.
    child.send(`auth ${await sign("x")}`);
    await child.line("auth-set");
    relay.restore();
    relay.muteReplies(["MutationResponse"]);
    await until(async () => (await log("doc")).length === 1, "the node applied the mutation");
    expect(await log("doc")).toEqual(["x:early"]);
    // Written as x's before it went out: the outbox never holds an identity it was not sent under.
    expect(decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test").mutations).toEqual([{ seq: 1, path: "log:append", args: { name: "doc", line: "early" }, issuedAs: X }]);
    await child.kill();
    relay.restore();

    const reloaded = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(() => reloaded.client.pendingMutations().length === 1, "the outbox restored");
    expect(pendingOf(reloaded.client)).toEqual([{ seq: 1, state: "waitingForAuth", issuedAs: X }]);
    expect(await reloaded.client.setAuth(await sign("x"))).toBe("x");
    await until(() => reloaded.client.pendingMutations().length === 0, "the restored mutation answered");
    expect(mutationSeqs(reloaded.sent)).toEqual([1]);
    expect(await log("doc")).toEqual(["x:early"]);
    expect(reloaded.errors).toEqual([]);
    expect(existsSync(outboxPath)).toBe(false);
  });
});

/** The client process of outboxAuthChild.ts, with its stdout read line by line. */
function startChild(url: string, outboxPath: string, directory: string) {
  return startOutboxChild("outboxAuthChild.ts", url, outboxPath, directory, cleanups);
}
