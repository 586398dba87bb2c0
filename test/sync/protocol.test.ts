/**
 * Scenario: frames off the wire, in both directions, as a hostile peer would send them.
 * Every message type parses back to what was encoded; a frame one past any limit, with a
 * key the schema does not name, with a counter that is negative, fractional or unsafe, or
 * with a field of the wrong type is refused with PROTOCOL_INVALID, and the message names
 * the frame, the field and what is wrong, in English.
 */
import { describe, expect, it } from "vitest";
import {
  AUTH_TOKEN_CHARS_MAX,
  MUTATION_BATCH_ENTRIES_MAX,
  PROTOCOL_NAME_CHARS_MAX,
  SESSION_QUERIES_MAX,
  SESSION_TOPICS_MAX,
  TOPIC_CHARS_MAX,
} from "../../src/base/index.js";
import { encodeMessage, parseClientMessage, parseServerMessage, type ClientMessage, type ServerMessage } from "../../src/sync/index.js";

const error = { code: "APP_ERROR", kind: "InvalidInput", message: "no", details: { field: "name" }, data: { $integer: "7" } };

const clientFrames: ClientMessage[] = [
  { type: "Connect", sessionId: "s", clientId: "c", held: [1, 2], ackedThrough: 0, maxObservedTs: 9 },
  { type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: {}, resultHash: "h" }], remove: [2] },
  { type: "Mutation", requestId: 1, path: "notes:add", args: { text: "hi" }, clientId: "c", seq: 3, ackedThrough: 2 },
  { type: "MutationBatch", entries: [{ requestId: 2, path: "notes:add", args: [] }] },
  { type: "Action", requestId: 3, path: "mail:send", args: null },
  { type: "SetAuth", token: null },
  { type: "Publish", topic: "cursor", event: { x: 1 } },
  { type: "ModifyTopics", add: ["cursor"], remove: [] },
];

const serverFrames: ServerMessage[] = [
  { type: "ConnectAck", deploymentId: "d", sessionId: "s", known: [1], results: [{ seq: 1, value: "ok", ts: 4 }], ts: 5 },
  {
    type: "Transition",
    startVersion: { querySet: 0, ts: 0 },
    endVersion: { querySet: 1, ts: 5 },
    modifications: [
      { type: "QueryUpdated", queryId: 1, value: [1], hash: "a" },
      { type: "QueryFailed", queryId: 2, error, hash: "b" },
      { type: "QueryRemoved", queryId: 3 },
      { type: "QueryUnchanged", queryId: 4, hash: "c" },
    ],
  },
  { type: "MutationResponse", requestId: 1, success: true, value: null, ts: 5, replayed: true },
  { type: "MutationResponse", requestId: 2, success: false, error },
  { type: "ActionResponse", requestId: 3, success: true, value: 1 },
  { type: "ActionResponse", requestId: 4, success: false, error },
  { type: "AuthResponse", success: false, subject: null, error },
  { type: "AuthExpired", error },
  { type: "Broadcast", topic: "cursor", event: { x: 1 } },
  { type: "ProtocolError", error, requestId: 9 },
  { type: "FatalError", error },
];

/** The PROTOCOL_INVALID message a frame is refused with ("accepted" if it parses). */
function refusal(parse: (text: string) => unknown, frame: unknown): string {
  try {
    parse(typeof frame === "string" ? frame : JSON.stringify(frame));
    return "accepted";
  } catch (thrown) {
    expect(thrown).toMatchObject({ code: "PROTOCOL_INVALID" });
    return (thrown as Error).message;
  }
}
const clientRefusal = (frame: unknown) => refusal(parseClientMessage, frame);
const serverRefusal = (frame: unknown) => refusal(parseServerMessage, frame);

const names = (count: number) => Array.from({ length: count }, (_, index) => `t${index}`);

describe("the sync protocol's frames", () => {
  it("parse back to what was encoded, every type in both directions", () => {
    for (const frame of clientFrames) expect(parseClientMessage(encodeMessage(frame))).toEqual(frame);
    for (const frame of serverFrames) expect(parseServerMessage(encodeMessage(frame))).toEqual(frame);
  });

  it("are refused one past each client limit, and accepted at it", () => {
    const atAndPast = (build: (size: number) => unknown, limit: number) => [clientRefusal(build(limit)), clientRefusal(build(limit + 1))];
    expect(atAndPast((size) => ({ type: "Action", requestId: 1, path: "p".repeat(size), args: 1 }), PROTOCOL_NAME_CHARS_MAX)).toEqual([
      "accepted",
      `invalid Action frame: ✖ Too big: expected string to have <=${PROTOCOL_NAME_CHARS_MAX} characters\n  → at path`,
    ]);
    expect(atAndPast((size) => ({ type: "SetAuth", token: "t".repeat(size) }), AUTH_TOKEN_CHARS_MAX)[1]).toBe(
      `invalid SetAuth frame: ✖ Too big: expected string to have <=${AUTH_TOKEN_CHARS_MAX} characters\n  → at token`,
    );
    expect(atAndPast((size) => ({ type: "Publish", topic: "t".repeat(size), event: 1 }), TOPIC_CHARS_MAX)[1]).toMatch(/→ at topic$/);
    expect(atAndPast((size) => ({ type: "ModifyTopics", add: names(size), remove: [] }), SESSION_TOPICS_MAX)[1]).toMatch(/expected array to have <=100 items\n {2}→ at add$/);
    const entry = { requestId: 1, path: "p", args: 1 };
    expect(atAndPast((size) => ({ type: "MutationBatch", entries: Array.from({ length: size }, () => entry) }), MUTATION_BATCH_ENTRIES_MAX)[1]).toMatch(/→ at entries$/);
    expect(atAndPast((size) => ({ type: "Connect", sessionId: "s", held: Array.from({ length: size }, (_, seq) => seq) }), MUTATION_BATCH_ENTRIES_MAX)[1]).toMatch(/→ at held$/);
    const query = (queryId: number) => ({ queryId, path: "q", args: {} });
    expect(atAndPast((size) => ({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: Array.from({ length: size }, (_, id) => query(id)), remove: [] }), SESSION_QUERIES_MAX)).toEqual([
      "accepted",
      expect.stringMatching(/→ at add$/),
    ]);
    expect(clientRefusal({ type: "MutationBatch", entries: [] })).toBe("invalid MutationBatch frame: ✖ Too small: expected array to have >=1 items\n  → at entries");
    expect(clientRefusal({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ ...query(1), resultHash: "h".repeat(129) }], remove: [] })).toMatch(/→ at add\[0\]\.resultHash$/);
  });

  it("refuse a counter that is negative, fractional, past 2^53 - 1 or not a number", () => {
    expect(clientRefusal({ type: "Action", requestId: Number.MAX_SAFE_INTEGER, path: "p", args: 1 })).toBe("accepted");
    for (const requestId of [-1, 1.5, 2 ** 53, "1", null, 1e400]) {
      expect(clientRefusal(`{"type":"Action","requestId":${JSON.stringify(requestId) ?? "1e400"},"path":"p","args":1}`)).toMatch(/^invalid Action frame: ✖ .*\n {2}→ at requestId$/);
    }
    expect(serverRefusal({ ...serverFrames[1], endVersion: { querySet: 1, ts: -5 } })).toBe("invalid Transition frame: ✖ Too small: expected number to be >=0\n  → at endVersion.ts");
  });

  it("refuse keys the schema does not name, __proto__ included, at any depth", () => {
    expect(clientRefusal({ type: "Connect", sessionId: "s", admin: true })).toBe('invalid Connect frame: ✖ Unrecognized key: "admin"');
    expect(clientRefusal('{"type":"Publish","topic":"t","event":1,"__proto__":{"polluted":true}}')).toBe('invalid Publish frame: ✖ Unrecognized key: "__proto__"');
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(clientRefusal({ type: "MutationBatch", entries: [{ requestId: 1, path: "p", args: 1, type: "Action" }] })).toBe('invalid MutationBatch frame: ✖ Unrecognized key: "type"\n  → at entries[0]');
    expect(serverRefusal({ type: "FatalError", error: { ...error, stack: "at x" } })).toBe('invalid FatalError frame: ✖ Unrecognized key: "stack"\n  → at error');
  });

  it("refuse a frame that is not JSON, not an object, of no known type, or sent the wrong way", () => {
    expect(clientRefusal("{oops")).toBe("a client frame must be JSON text");
    expect(serverRefusal("")).toBe("a server frame must be JSON text");
    expect(clientRefusal([clientFrames[0]])).toBe("invalid client frame: ✖ Invalid input: expected object, received array");
    expect(clientRefusal({ type: "Shutdown" })).toMatch(/^invalid Shutdown frame: ✖ Invalid discriminator value\. Expected 'Connect' \| .*\n {2}→ at type$/);
    for (const frame of serverFrames) expect(clientRefusal(frame)).not.toBe("accepted");
    for (const frame of clientFrames) expect(serverRefusal(frame)).not.toBe("accepted");
  });

  it("refuse a server answer whose success does not match its fields, or whose error lacks a code", () => {
    expect(serverRefusal({ type: "MutationResponse", requestId: 1, success: "yes", value: 1, ts: 1 })).toBe(
      "invalid MutationResponse frame: ✖ Invalid discriminator value. Expected 'true' | 'false'\n  → at success",
    );
    expect(serverRefusal({ type: "ActionResponse", requestId: 1, success: false, value: 1 })).toMatch(/^invalid ActionResponse frame: ✖ Unrecognized key: "value"\n/);
    expect(serverRefusal({ type: "AuthExpired", error: { kind: "Auth", message: "expired" } })).toBe(
      "invalid AuthExpired frame: ✖ Invalid input: expected string, received undefined\n  → at error.code",
    );
  });

  it("name the frame type in the error's details", () => {
    try {
      parseServerMessage(JSON.stringify({ type: "Broadcast", topic: "", event: 1 }));
      expect.unreachable();
    } catch (thrown) {
      expect(thrown).toMatchObject({ code: "PROTOCOL_INVALID", details: { frame: "Broadcast" } });
    }
  });
});
