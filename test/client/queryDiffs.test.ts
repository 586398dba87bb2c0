import { describe, expect, it } from "vitest";
import { addRow, checksumOf, emptySums, pageEnvelopeText } from "../../src/sync/resultChecksum.js";
import type { QueryModification } from "../../src/sync/protocol.js";
import { StateHarness, frameOfType, recorder } from "./stateHarness.js";

/**
 * Scenario: the client's side of incremental diffs and resume (issue 30), without a
 * server: it announces diffs, applies QueryDiffs by order key in either order (pages with
 * their envelope, documents), and for a diff that does not add up to its checksum — a
 * wrong base, an unknown key, a duplicate add, a result held without rows, a checksum
 * that lies — keeps showing the result it had, sends ResetQuery once, ignores diffs until
 * the whole result comes, and on a reconnect names no hash for it. A reconnect asks to
 * resume the session it lost, with the ts its results showed.
 */
interface Row {
  readonly key: string;
  readonly value: { readonly _id: string; readonly n: number };
}

function checksum(rows: readonly Row[], envelope = ""): string {
  const sums = emptySums();
  for (const row of rows) addRow(sums, row.key, JSON.stringify(row.value), 1);
  return checksumOf(sums, envelope);
}

function row(key: string, n: number): Row {
  return { key, value: { _id: `id-${key}`, n } };
}

function updated(queryId: number, rows: readonly Row[], order: "asc" | "desc" = "asc"): QueryModification {
  return { type: "QueryUpdated", queryId, value: rows.map((r) => r.value), hash: checksum(rows), rows: { shape: "array", order, keys: rows.map((r) => r.key) } };
}

function diff(queryId: number, changes: Extract<QueryModification, { type: "QueryDiff" }>["changes"], after: readonly Row[]): QueryModification {
  return { type: "QueryDiff", queryId, changes, checksum: checksum(after) };
}

describe("query diffs in the client", () => {
  it("announces diffs, applies them by key in either order, and shows each result", () => {
    const client = new StateHarness();
    const connect = client.connect();
    expect(connect).toMatchObject({ diffs: true });
    expect(connect.resume).toBeUndefined();
    client.takeSent();
    client.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts: 3 }, []);
    const ascending = recorder();
    const descending = recorder();
    client.subscribe("items:list", { order: "asc" }, ascending.listener);
    client.subscribe("items:list", { order: "desc" }, descending.listener);
    client.takeSent();
    const up = [row("B", 1), row("D", 2), row("F", 3)];
    const down = [...up].reverse();
    client.transition({ querySet: 1, ts: 3 }, { querySet: 3, ts: 4 }, [updated(1, up), updated(2, down, "desc")]);
    expect(ascending.updates.at(-1)).toEqual(up.map((r) => r.value));
    // Insert C between B and D, edit F, remove B; the same on the descending result.
    const upAfter = [row("C", 9), row("D", 2), row("F", 30)];
    const changes = [
      { op: "remove" as const, key: "B" },
      { op: "edit" as const, key: "F", value: { _id: "id-F", n: 30 } },
      { op: "add" as const, key: "C", value: { _id: "id-C", n: 9 } },
    ];
    client.transition({ querySet: 3, ts: 4 }, { querySet: 3, ts: 5 }, [diff(1, changes, upAfter), diff(2, changes, [...upAfter].reverse())]);
    expect(ascending.updates.at(-1)).toEqual(upAfter.map((r) => r.value));
    expect(descending.updates.at(-1)).toEqual([...upAfter].reverse().map((r) => r.value));
    expect(frameOfType(client.takeSent(), "ResetQuery")).toEqual([]);
  });

  it("applies a page's envelope and a document's edit", () => {
    const client = new StateHarness();
    client.connectAt(2);
    const page = recorder();
    const document = recorder();
    client.subscribe("items:page", {}, page.listener);
    client.subscribe("items:get", {}, document.listener);
    client.takeSent();
    const rows = [row("A", 1)];
    const envelope = pageEnvelopeText(true, "done");
    client.transition({ querySet: 1, ts: 2 }, { querySet: 3, ts: 3 }, [
      { type: "QueryUpdated", queryId: 1, value: { page: rows.map((r) => r.value), isDone: true, continueCursor: "done" }, hash: checksum(rows, envelope), rows: { shape: "page", order: "asc", keys: ["A"] } },
      { type: "QueryUpdated", queryId: 2, value: rows[0]!.value, hash: checksum(rows), rows: { shape: "document", order: "asc", keys: ["A"] } },
    ]);
    const grown = [row("A", 1), row("B", 2)];
    client.transition({ querySet: 3, ts: 3 }, { querySet: 3, ts: 4 }, [
      { type: "QueryDiff", queryId: 1, changes: [{ op: "add", key: "B", value: grown[1]!.value }], page: { isDone: false, continueCursor: "after-B" }, checksum: checksum(grown, pageEnvelopeText(false, "after-B")) },
      { type: "QueryDiff", queryId: 2, changes: [{ op: "edit", key: "A", value: { _id: "id-A", n: 7 } }], checksum: checksum([row("A", 7)]) },
    ]);
    expect(page.updates.at(-1)).toEqual({ page: grown.map((r) => r.value), isDone: false, continueCursor: "after-B" });
    expect(document.updates.at(-1)).toEqual({ _id: "id-A", n: 7 });
  });

  it("never shows a diff that does not add up: keeps the result, asks ResetQuery once, ignores diffs until the whole result", () => {
    const bad: [string, (rows: readonly Row[]) => QueryModification][] = [
      ["a lying checksum", () => ({ type: "QueryDiff", queryId: 1, changes: [{ op: "add", key: "C", value: { _id: "id-C", n: 5 } }], checksum: "d9.9.9.9" })],
      ["a removal of an unknown key", (rows) => diff(1, [{ op: "remove", key: "Z" }], rows)],
      ["an edit of an unknown key", (rows) => diff(1, [{ op: "edit", key: "Z", value: { _id: "z", n: 0 } }], rows)],
      ["an add of a key held", (rows) => diff(1, [{ op: "add", key: "A", value: rows[0]!.value }], rows)],
      ["a value that does not decode", () => diff(1, [{ op: "add", key: "C", value: { $bad: 1 } }], [])],
    ];
    for (const [what, make] of bad) {
      const client = new StateHarness();
      client.connectAt(2);
      const seen = recorder();
      client.subscribe("items:list", {}, seen.listener);
      client.takeSent();
      const rows = [row("A", 1), row("B", 2)];
      client.transition({ querySet: 1, ts: 2 }, { querySet: 2, ts: 3 }, [updated(1, rows)]);
      const shown = seen.updates.length;
      client.transition({ querySet: 2, ts: 3 }, { querySet: 2, ts: 4 }, [make(rows)]);
      expect(seen.updates.length, what).toBe(shown);
      expect(frameOfType(client.takeSent(), "ResetQuery"), what).toEqual([{ type: "ResetQuery", queryId: 1 }]);
      // A later diff, based on the server's state, is not applied to the suspect result, nor asked again.
      client.transition({ querySet: 2, ts: 4 }, { querySet: 2, ts: 5 }, [diff(1, [{ op: "remove", key: "A" }], [row("B", 2)])]);
      expect(seen.updates.length, what).toBe(shown);
      expect(frameOfType(client.takeSent(), "ResetQuery"), what).toEqual([]);
      // The whole result arrives: shown, and diffs apply again.
      const fresh = [row("B", 2), row("C", 3)];
      client.transition({ querySet: 2, ts: 5 }, { querySet: 2, ts: 6 }, [updated(1, fresh)]);
      expect(seen.updates.at(-1), what).toEqual(fresh.map((r) => r.value));
      client.transition({ querySet: 2, ts: 6 }, { querySet: 2, ts: 7 }, [diff(1, [{ op: "remove", key: "B" }], [row("C", 3)])]);
      expect(seen.updates.at(-1), what).toEqual([row("C", 3).value]);
    }
  });

  it("asks a reset for a diff of a result it holds without rows (a plain QueryUpdated, or rows that did not add up)", () => {
    const client = new StateHarness();
    client.connectAt(2);
    client.subscribe("items:list", {});
    client.subscribe("items:other", {});
    client.takeSent();
    const rows = [row("A", 1)];
    client.transition({ querySet: 1, ts: 2 }, { querySet: 3, ts: 3 }, [
      { type: "QueryUpdated", queryId: 1, value: [rows[0]!.value], hash: "plain-hash" },
      { type: "QueryUpdated", queryId: 2, value: [rows[0]!.value], hash: "d1.wrong.0.0", rows: { shape: "array", order: "asc", keys: ["A"] } },
    ]);
    client.transition({ querySet: 3, ts: 3 }, { querySet: 3, ts: 4 }, [diff(1, [{ op: "remove", key: "A" }], []), diff(2, [{ op: "remove", key: "A" }], [])]);
    expect(frameOfType(client.takeSent(), "ResetQuery")).toEqual([
      { type: "ResetQuery", queryId: 1 },
      { type: "ResetQuery", queryId: 2 },
    ]);
  });

  it("asks to resume the lost session with the ts its results showed, and names no hash for a result awaiting a reset", () => {
    const client = new StateHarness();
    const first = client.connect();
    client.takeSent();
    client.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts: 3 }, []);
    client.subscribe("items:list", {});
    client.subscribe("items:other", {});
    client.takeSent();
    const rows = [row("A", 1)];
    client.transition({ querySet: 1, ts: 3 }, { querySet: 3, ts: 8 }, [updated(1, rows), updated(2, rows)]);
    client.transition({ querySet: 3, ts: 8 }, { querySet: 3, ts: 9 }, [diff(2, [{ op: "remove", key: "Q" }], [])]);
    expect(frameOfType(client.takeSent(), "ResetQuery")).toHaveLength(1);
    client.lose();
    const second = client.connect();
    expect(second.resume).toEqual({ sessionId: first.sessionId, sinceTs: 9 });
    const adds = frameOfType(client.takeSent(), "ModifyQuerySet").flatMap((frame) => frame.add);
    expect(adds).toEqual([
      { queryId: 1, path: "items:list", args: {}, resultHash: checksum(rows) },
      { queryId: 2, path: "items:other", args: {} },
    ]);
    // A connection lost before its session showed anything asks nothing of it.
    client.lose();
    expect(client.connect().resume).toBeUndefined();
  });
});
