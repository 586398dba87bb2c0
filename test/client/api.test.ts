import { describe, expect, it } from "vitest";
import { apiOf, functionReference } from "../../src/client/api.js";
import type { functions } from "../../demo/app.js";

/** Scenario: the demo app's functions referenced through apiOf, as an app's UI would. (Types: apiTypes.ts.) */
describe("apiOf", () => {
  const api = apiOf<typeof functions>();

  it("names each member by its module:name path, one frozen object per path", () => {
    expect(api.messages.list.path).toBe("messages:list");
    expect(api.counters.increment.path).toBe("counters:increment");
    expect(api.messages.list).toBe(api.messages.list);
    expect(api.messages.list).not.toBe(api.messages.page);
    expect(Object.isFrozen(api.messages.send)).toBe(true);
    expect(JSON.stringify(api.messages.send)).toBe('{"path":"messages:send"}');
  });

  it("answers symbols (inspection, await) with undefined", () => {
    const members = api.messages as unknown as Record<symbol, unknown>;
    expect(members[Symbol.toStringTag]).toBeUndefined();
    expect(members[Symbol.iterator]).toBeUndefined();
  });
});

describe("functionReference", () => {
  it("accepts module:name and refuses anything else", () => {
    expect(functionReference<"query">("a:b").path).toBe("a:b");
    for (const path of ["", "ab", ":b", "a:", "a:b:c"]) expect(() => functionReference(path)).toThrow(/module:name/);
  });
});
