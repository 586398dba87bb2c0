import { describe, expect, it } from "vitest";
import { ManualClock, SYNC_RESUME_SESSIONS_MAX, SYNC_RESUME_TTL_MS } from "../../src/base/index.js";
import { pointRange } from "../../src/model/index.js";
import { ResumeRegistry, type ResumableQuery } from "../../src/sync/ResumeRegistry.js";

/**
 * The resume registry's bounds (issue 30): a registration is claimed at most once and
 * never after its TTL; past the session bound the oldest go first; registering a session
 * again replaces it; clearing forgets all. A dropped registration costs runs, never a
 * wrong answer, so these are the only promises it makes.
 */
function query(digest: string): ResumableQuery {
  return { digest, identityKey: "", hash: `h-${digest}`, validTs: 10, readRanges: [pointRange("table:1", new Uint8Array([1, 2, 3]))], diff: null };
}

describe("resume registry", () => {
  it("is claimed once, and not after its TTL", () => {
    const clock = new ManualClock(0);
    const registry = new ResumeRegistry(clock);
    registry.register("a", [query("q1"), query("q2")]);
    registry.register("b", [query("q3")]);
    expect(registry.stats).toMatchObject({ sessions: 2, queries: 3 });
    expect([...registry.claim("a")!.keys()]).toEqual(["q1", "q2"]);
    expect(registry.claim("a")).toBeNull();
    clock.advance(SYNC_RESUME_TTL_MS);
    expect(registry.claim("b")).toBeNull();
    expect(registry.stats).toMatchObject({ sessions: 0, queries: 0, bytes: 0 });
  });

  it("drops the oldest past its bound, replaces a session registered again, forgets everything on clear, keeps none without queries", () => {
    const registry = new ResumeRegistry(new ManualClock(0));
    for (let at = 0; at <= SYNC_RESUME_SESSIONS_MAX; at++) registry.register(`s${at}`, [query(`q${at}`)]);
    expect(registry.stats.sessions).toBe(SYNC_RESUME_SESSIONS_MAX);
    expect(registry.claim("s0")).toBeNull();
    expect(registry.claim(`s${SYNC_RESUME_SESSIONS_MAX}`)).not.toBeNull();
    registry.register("s1", [query("other")]);
    expect([...registry.claim("s1")!.keys()]).toEqual(["other"]);
    registry.register("empty", []);
    expect(registry.claim("empty")).toBeNull();
    registry.clear();
    expect(registry.stats).toEqual({ sessions: 0, queries: 0, bytes: 0 });
    expect(registry.claim("s2")).toBeNull();
  });
});
