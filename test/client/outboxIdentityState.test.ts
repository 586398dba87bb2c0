import { describe, expect, it } from "vitest";
import { crc32 } from "../../src/client/crc32.js";
import type { AuthIdentity } from "../../src/client/AuthIdentity.js";
import { decodeOutboxRecord, encodeOutboxRecord, type OutboxRecord } from "../../src/client/OutboxRecord.js";
import type { ClientMessage } from "../../src/sync/protocol.js";
import { outcomeOf, StateHarness } from "./stateHarness.js";

/**
 * Scenario: a client state restored from an outbox whose mutations were issued as
 * different identities, driven with plain server messages. A restored mutation goes out
 * only once the server accepted a token of the identity it was issued as (anonymous: no
 * token) on the connection — not right after the SetAuth, since a refused token leaves
 * the session anonymous, and again after every reconnect. Under another identity it is
 * held (`waitingForAuth`), reported once as OUTBOX_IDENTITY_MISMATCH, and no later
 * mutation overtakes it; the app can discard it. A record from before identities (version
 * 1) holds mutations of unknown identity: reported at once and never sent.
 */
const X: AuthIdentity = { kind: "user", issuer: "https://auth.example", subject: "x" };
const Y: AuthIdentity = { kind: "user", issuer: "https://auth.example", subject: "y" };
const ANONYMOUS: AuthIdentity = { kind: "anonymous" };

/** A JWT-shaped token naming `sub` (and `iss`); its signature is for the server to check, the client never does. */
function token(claims: { sub?: unknown; iss?: unknown }): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "HS256" })}.${part(claims)}.c2lnbmF0dXJl`;
}
const tokenX = token({ sub: "x", iss: "https://auth.example" });
const tokenY = token({ sub: "y", iss: "https://auth.example" });

function record(issued: readonly AuthIdentity[]): OutboxRecord {
  return {
    clientId: "persisted-client",
    nextSeq: issued.length + 1,
    mutations: issued.map((issuedAs, index) => ({ seq: index + 1, path: "log:append", args: { line: `m${index + 1}` }, issuedAs })),
  };
}

const mutationSeqs = (frames: readonly ClientMessage[]) =>
  frames.flatMap((frame) => (frame.type === "Mutation" ? [frame.seq] : frame.type === "MutationBatch" ? frame.entries.map((entry) => entry.seq) : []));

const states = (client: StateHarness) => client.state.pendingMutations().map((mutation) => [mutation.seq, mutation.status.state]);

describe("restored mutations and the identity they were issued as", () => {
  it("sends a user's restored mutations only once the server accepted that user's token, never after a refused one, and lets nothing overtake them", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(record([ANONYMOUS, X, X])));
    client.connect();
    // The anonymous one goes at once; X's wait, and so does everything after them.
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
    expect(states(client)).toEqual([[1, "inFlight"], [2, "waitingForAuth"], [3, "waitingForAuth"]]);
    const later = client.mutate("log:append", { line: "later" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(mutationSeqs(client.takeSent())).toEqual([]);

    // A token claiming X that the server refuses: the session stays anonymous, nothing goes.
    const forged = client.step((state) => state.setAuth(tokenX));
    expect(client.takeSent()).toEqual([{ type: "SetAuth", token: tokenX }]);
    client.receive({ type: "AuthResponse", success: false, subject: null, error: { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "bad signature" } });
    expect(await outcomeOf(forged)).toMatchObject({ state: "rejected", error: { code: "UNAUTHENTICATED" } });
    expect(mutationSeqs(client.takeSent())).toEqual([]);

    // X's token accepted: X's mutations go after its AuthResponse, not after its SetAuth. The
    // later one, made anonymously and never sent, is X's now: saved so before it goes after them.
    client.step((state) => state.setAuth(tokenX));
    expect(client.takeSent()).toEqual([{ type: "SetAuth", token: tokenX }]);
    expect(states(client)).toEqual([[1, "inFlight"], [2, "waiting"], [3, "waiting"], [4, "waiting"]]);
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    const sent = client.takeSent();
    expect(sent.map((frame) => frame.type)).toEqual(["MutationBatch"]);
    expect(mutationSeqs(sent)).toEqual([2, 3]);
    expect(states(client)).toEqual([[1, "inFlight"], [2, "inFlight"], [3, "inFlight"], [4, "saving"]]);
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.issuedAs)).toEqual([ANONYMOUS, X, X, X]);
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(client.takeSent()).toEqual([expect.objectContaining({ type: "Mutation", seq: 4 })]);
    expect(client.errors).toEqual([]);
    expect(await outcomeOf(later)).toEqual({ state: "pending" });
  });

  it("waits for the AuthResponse again on every new connection", () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.setAuth(tokenX));
    client.step((state) => state.restoreOutbox(record([X])));
    client.connect();
    expect(client.takeSent()).toContainEqual({ type: "SetAuth", token: tokenX });
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
    client.lose();
    client.connect();
    const resent = client.takeSent();
    expect(resent).toContainEqual({ type: "SetAuth", token: tokenX });
    expect(mutationSeqs(resent)).toEqual([]);
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
  });

  it("holds X's mutations while signed in as Y or signed out, reports them once, and drops those the app discards", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(record([X, X])));
    client.step((state) => state.setAuth(tokenY));
    expect(client.errors).toEqual([
      expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", kind: "InvalidInput", details: expect.objectContaining({ seqs: [1, 2], issuedAs: [X, X], signedInAs: Y }) }),
    ]);
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: "y" });
    const made = client.mutate("log:append", { line: "as y" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    // Reconnecting sends nothing of X's and reports nothing again; signing out holds y's too
    // (made as y, never sent as anyone else), reported once on its own.
    client.lose();
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: "y" });
    expect(client.errors).toHaveLength(1);
    client.step((state) => state.setAuth(null));
    client.receive({ type: "AuthResponse", success: true, subject: null });
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    expect(client.errors).toEqual([expect.anything(), expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", details: expect.objectContaining({ seqs: [3], signedInAs: ANONYMOUS }) })]);
    expect(states(client)).toEqual([[1, "waitingForAuth"], [2, "waitingForAuth"], [3, "waitingForAuth"]]);

    // Discarding only drops mutations held for auth: seq 1 first, then X's rest; y's goes once y signs in again.
    const first = client.step((state) => state.discardWaitingForAuth((mutation) => mutation.seq === 1));
    expect(first.map((mutation) => mutation.seq)).toEqual([1]);
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.seq)).toEqual([2, 3]);
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    const rest = client.step((state) => state.discardWaitingForAuth((mutation) => mutation.issuedAs.kind === "user" && mutation.issuedAs.subject === "x"));
    expect(rest.map((mutation) => mutation.seq)).toEqual([2]);
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    client.step((state) => state.setAuth(tokenY));
    client.receive({ type: "AuthResponse", success: true, subject: "y" });
    expect(client.takeSent()).toEqual([expect.objectContaining({ type: "SetAuth" }), expect.objectContaining({ type: "Mutation", seq: 3, ackedThrough: 2 })]);
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.seq)).toEqual([3]);
    expect(client.errors).toHaveLength(2);
    expect(await outcomeOf(made)).toEqual({ state: "pending" });
  });

  it("matches nothing when the server verifies the token as another subject than its payload names", () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(record([X])));
    client.step((state) => state.setAuth(tokenX));
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: "someone-else" });
    expect(mutationSeqs(client.takeSent())).toEqual([]);
  });

  it("treats a token that names no subject, and a record from before identities, as an unknown identity that is reported at once and never sent", () => {
    const opaque = new StateHarness("provisional");
    opaque.step((state) => state.setAuth("an-opaque-token"));
    void opaque.mutate("log:append", { line: "opaque" });
    expect(opaque.state.outboxRecord().mutations).toEqual([expect.objectContaining({ issuedAs: { kind: "unknown" } })]);

    const body = JSON.stringify({ clientId: "old-client", nextSeq: 3, mutations: [1, 2].map((seq) => ({ seq, path: "log:append", args: { line: `old${seq}` } })) });
    const versionOne = `cairn-outbox 1 ${crc32(body).toString(16).padStart(8, "0")}\n${body}`;
    const restored = decodeOutboxRecord(versionOne, "test");
    expect(restored.mutations.map((mutation) => mutation.issuedAs)).toEqual([{ kind: "unknown" }, { kind: "unknown" }]);
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(restored));
    expect(client.errors).toEqual([expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", details: expect.objectContaining({ seqs: [1, 2] }) })]);
    for (const [auth, subject] of [[null, null], [tokenX, "x"], ["an-opaque-token", "opaque"]] as const) {
      client.step((state) => state.setAuth(auth));
      client.connect();
      client.receive({ type: "AuthResponse", success: true, subject });
      expect(mutationSeqs(client.takeSent()), String(subject)).toEqual([]);
      client.lose();
    }
    // Written back, the record is version 2 and keeps them unknown.
    const rewritten = encodeOutboxRecord(client.state.outboxRecord());
    expect(rewritten.startsWith("cairn-outbox 2 ")).toBe(true);
    expect(decodeOutboxRecord(rewritten, "test").mutations.map((mutation) => mutation.issuedAs.kind)).toEqual(["unknown", "unknown"]);
    expect(client.errors).toHaveLength(1);
  });

  it("refuses a record whose identities are malformed, as a whole", () => {
    const good = encodeOutboxRecord(record([X]));
    const body = good.slice(good.indexOf("\n") + 1);
    const malformed = [
      body.replace('"kind":"user"', '"kind":"admin"'),
      body.replace('"subject":"x"', '"subject":7'),
      body.replace(',"issuedAs":{"kind":"user","issuer":"https://auth.example","subject":"x"}', ""),
      body.replace('"issuer":"https://auth.example",', ""),
    ];
    for (const text of malformed) {
      expect(text).not.toBe(body);
      const signed = `cairn-outbox 2 ${crc32(text).toString(16).padStart(8, "0")}\n${text}`;
      expect(() => decodeOutboxRecord(signed, "test"), text).toThrow(expect.objectContaining({ code: "OUTBOX_INVALID" }));
    }
  });
});

/**
 * Scenario: mutations made in this session while the app's auth changes before they go
 * out. The outbox must always hold, for each mutation, the identity it is sent under —
 * else a reload would send it as another identity than the one its receipt is owned by.
 * - Made anonymously before the app's token was accepted: the session it first goes out
 *   in (X's) claims it, and it goes only once a save holding X landed (a save begun
 *   before the claim does not count). Once sent, its identity is fixed.
 * - Made as X, then the app signs out before it goes: it is held (never sent
 *   anonymously), reported once, and no later mutation overtakes it; it goes once X signs
 *   in again, or the app discards it (its promise rejects).
 */
describe("this session's mutations and the identity they are sent under", () => {
  const issued = (client: StateHarness) => client.state.outboxRecord().mutations.map((mutation) => mutation.issuedAs);

  it("records a mutation made anonymously as X when X's session is the one it goes out in, durably before it goes", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(null));
    const made = client.mutate("log:append", { line: "before the token" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(issued(client)).toEqual([ANONYMOUS]);
    // The token arrives while offline; on the next connection the mutation waits for its answer.
    client.step((state) => state.setAuth(tokenX));
    client.connect();
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    const savedBefore = client.state.outboxRecord();
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(issued(client)).toEqual([X]);
    expect(states(client)).toEqual([[1, "saving"]]);
    // A save that began before the claim holds it as anonymous: it must not go on that one.
    client.step((state) => state.mutationsSaved(savedBefore));
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
    expect(client.errors).toEqual([]);

    // Sent as X, its identity is fixed: after a sign-out it is held, never re-sent anonymously.
    client.lose();
    client.step((state) => state.setAuth(null));
    client.connect();
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    expect(states(client)).toEqual([[1, "waitingForAuth"]]);
    expect(issued(client)).toEqual([X]);
    expect(client.errors).toEqual([expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", details: expect.objectContaining({ seqs: [1], issuedAs: [X], signedInAs: ANONYMOUS }) })]);
    expect(await outcomeOf(made)).toEqual({ state: "pending" });
  });

  it("without an outbox, sends a mutation made anonymously as the session's identity at once", () => {
    const client = new StateHarness();
    client.step((state) => state.setAuth(tokenX));
    void client.step((state) => state.setAuth(null));
    void client.mutate("log:append", { line: "anonymous" });
    client.step((state) => state.setAuth(tokenX));
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
    expect(client.state.pendingMutations().map((mutation) => mutation.issuedAs)).toEqual([X]);
  });

  it("holds a mutation made as X when the app signs out before it goes, lets nothing overtake it, and sends it once X is back", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(null));
    client.step((state) => state.setAuth(tokenX));
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    client.lose();
    const asX = client.mutate("log:append", { line: "as x" });
    client.step((state) => state.setAuth(null));
    const anonymous = client.mutate("log:append", { line: "signed out" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(issued(client)).toEqual([X, ANONYMOUS]);
    expect(client.errors).toEqual([expect.objectContaining({ code: "OUTBOX_IDENTITY_MISMATCH", details: expect.objectContaining({ seqs: [1], issuedAs: [X], signedInAs: ANONYMOUS }) })]);
    client.connect();
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    expect(states(client)).toEqual([[1, "waitingForAuth"], [2, "waiting"]]);

    // X signs in again: X's goes as X; the one made signed out was never sent, so it is X's too (saved so first).
    client.step((state) => state.setAuth(tokenX));
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(mutationSeqs(client.takeSent())).toEqual([1]);
    expect(issued(client)).toEqual([X, X]);
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(mutationSeqs(client.takeSent())).toEqual([2]);
    expect(client.errors).toHaveLength(1);
    expect(await outcomeOf(asX)).toEqual({ state: "pending" });
    expect(await outcomeOf(anonymous)).toEqual({ state: "pending" });
  });

  it("rejects a held mutation of this session that the app discards, and sends the later one as the session's identity", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(null));
    client.step((state) => state.setAuth(tokenX));
    const asX = client.mutate("log:append", { line: "as x" });
    client.step((state) => state.setAuth(null));
    const anonymous = client.mutate("log:append", { line: "signed out" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    client.connect();
    client.receive({ type: "AuthResponse", success: true, subject: null });
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    const discarded = client.step((state) => state.discardWaitingForAuth(() => true));
    expect(discarded.map((mutation) => mutation.seq)).toEqual([1]);
    expect(await outcomeOf(asX)).toMatchObject({ state: "rejected", error: { code: "OUTBOX_IDENTITY_MISMATCH", details: { seqs: [1], discarded: true } } });
    expect(client.takeSent()).toEqual([expect.objectContaining({ type: "Mutation", seq: 2 })]);
    expect(issued(client)).toEqual([ANONYMOUS]);
    expect(await outcomeOf(anonymous)).toEqual({ state: "pending" });
  });

  it("sends nothing in a session whose re-sent token the server refused: neither X's mutation nor one made before the token", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(null));
    void client.mutate("log:append", { line: "before the token" });
    const refusedToken = client.step((state) => state.setAuth(tokenX));
    void client.mutate("log:append", { line: "as x" });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    client.connect();
    // Sent only after the AuthResponse, not right after the SetAuth: the token may be refused.
    const onConnect = client.takeSent();
    expect(onConnect).toContainEqual({ type: "SetAuth", token: tokenX });
    expect(mutationSeqs(onConnect)).toEqual([]);
    client.receive({ type: "AuthResponse", success: false, subject: null, error: { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "expired" } });
    await expect(refusedToken).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    // The session is anonymous now, the app's auth still X: the first is not claimed as anonymous, the second waits.
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    expect(issued(client)).toEqual([ANONYMOUS, X]);
    // A fresh token of X: both go as X, the first once saved so.
    client.step((state) => state.setAuth(tokenX));
    client.receive({ type: "AuthResponse", success: true, subject: "x" });
    expect(issued(client)).toEqual([X, X]);
    expect(mutationSeqs(client.takeSent())).toEqual([]);
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(mutationSeqs(client.takeSent())).toEqual([1, 2]);
  });
});
