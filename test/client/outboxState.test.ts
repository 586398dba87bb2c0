import { describe, expect, it } from "vitest";
import { MUTATION_BATCH_ENTRIES_MAX } from "../../src/base/limits.js";
import { StateHarness, outcomeOf } from "./stateHarness.js";

/**
 * Scenario: the client state machine restores an outbox after a reload and is answered
 * with plain messages. Restored mutations are held in Connect and go out as
 * MutationBatch frames under the outbox's client id and seqs; new mutations wait until
 * the outbox holds them; each answer removes a mutation from the outbox record; a
 * restored mutation's failure is reported (nobody awaits it), except below the client's
 * floor, which says it was applied before the reload.
 */
const restored = (seqs: number[], nextSeq: number) => ({
  clientId: "persisted-client",
  nextSeq,
  mutations: seqs.map((seq) => ({ seq, path: "counters:bump", args: { name: `m${seq}` }, issuedAs: { kind: "anonymous" } as const })),
});

describe("a client state restored from an outbox", () => {
  it("holds the restored seqs in Connect, commits the known ones, batches the rest and numbers new mutations after them", async () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(restored([4, 5, 7], 9)));
    expect(client.state.clientId).toBe("persisted-client");
    const connect = client.connect({ known: [4], results: [{ seq: 4, value: 1, ts: 3 }] });
    expect(connect).toMatchObject({ clientId: "persisted-client", held: [4, 5, 7], ackedThrough: 3 });
    expect(client.takeSent().filter((frame) => frame.type.startsWith("Mutation"))).toEqual([
      {
        type: "MutationBatch",
        entries: [
          { requestId: 2, path: "counters:bump", args: { name: "m5" }, clientId: "persisted-client", seq: 5, ackedThrough: 4 },
          { requestId: 3, path: "counters:bump", args: { name: "m7" }, clientId: "persisted-client", seq: 7, ackedThrough: 4 },
        ],
      },
    ]);
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.seq)).toEqual([5, 7]);
    // A new mutation waits for the outbox, then goes out alone with the next seq.
    const made = client.mutate("counters:bump", { name: "new" });
    expect(client.takeSent()).toEqual([]);
    expect(client.state.outboxRecord()).toMatchObject({ nextSeq: 10, mutations: [{ seq: 5 }, { seq: 7 }, { seq: 9 }] });
    client.step((state) => state.mutationsSaved(state.outboxRecord()));
    expect(client.takeSent()).toEqual([{ type: "Mutation", requestId: 4, path: "counters:bump", args: { name: "new" }, clientId: "persisted-client", seq: 9, ackedThrough: 4 }]);
    client.receive({ type: "MutationResponse", requestId: 4, success: true, value: 2, ts: 5 });
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.seq)).toEqual([5, 7]);
    expect(await outcomeOf(made)).toEqual({ state: "pending" });
  });

  it("reports a restored mutation's failure naming it, takes MUTATION_SEQ_BELOW_FLOOR as applied, and re-sends MUTATION_NOT_RUN", () => {
    const client = new StateHarness("provisional");
    client.step((state) => state.restoreOutbox(restored([1, 2, 3], 4)));
    client.connect();
    client.takeSent();
    client.receive({ type: "MutationResponse", requestId: 1, success: false, error: { code: "MUTATION_SEQ_BELOW_FLOOR", kind: "InvalidInput", message: "below" } });
    client.receive({ type: "MutationResponse", requestId: 2, success: false, error: { code: "APP_ERROR", kind: "InvalidInput", message: "no such counter" } });
    client.receive({ type: "MutationResponse", requestId: 3, success: false, error: { code: "MUTATION_NOT_RUN", kind: "Unavailable", message: "not run" } });
    expect(client.errors).toEqual([
      expect.objectContaining({ code: "APP_ERROR", message: expect.stringContaining("counters:bump (seq 2)"), details: expect.objectContaining({ seq: 2, restored: true }) }),
    ]);
    // Seq 1 was applied before the reload and seq 2 failed: both left the outbox; seq 3 waits to be re-sent.
    expect(client.state.outboxRecord().mutations.map((mutation) => mutation.seq)).toEqual([3]);
    client.lose();
    client.connect();
    expect(client.takeSent().filter((frame) => frame.type.startsWith("Mutation"))).toEqual([
      { type: "MutationBatch", entries: [expect.objectContaining({ seq: 3, ackedThrough: 2 })] },
    ]);
  });

  it("splits a long restore into batches of MUTATION_BATCH_ENTRIES_MAX within the in-flight bound, and never reports restored mutations on close", () => {
    const client = new StateHarness("provisional");
    const seqs = Array.from({ length: 300 }, (_, index) => index + 1);
    client.step((state) => state.restoreOutbox(restored(seqs, 301)));
    client.connect();
    const batches = client.takeSent().filter((frame) => frame.type === "MutationBatch");
    expect(batches.every((batch) => batch.entries.length <= MUTATION_BATCH_ENTRIES_MAX)).toBe(true);
    expect(batches.flatMap((batch) => batch.entries.map((entry) => entry.seq))).toEqual(seqs.slice(0, batches.flatMap((batch) => batch.entries).length));
    client.step((state) => state.close());
    expect(client.errors).toEqual([]);
  });
});
