/**
 * Scenario: a fleet node's checks of its peers' presence entries. A peer whose advertised
 * URL does not answer (nothing listens there) is named in a warning once, and again only
 * after it was reachable in between; one that answers (a real HTTP server) is not. A
 * peer whose entry is stamped further ahead (or further behind, beyond a beat) than the
 * tolerated clock skew is warned of once, and said to agree again when it does.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { PeerChecks, PeerClient, type NodeEntry } from "../../src/fleet/index.js";
import { eventually } from "../support/Gate.js";

function entry(nodeId: string, url: string | null, updatedAt: number): NodeEntry {
  return { version: 1, nonce: "n", deploymentId: "d".repeat(32), nodeId, url, role: "fleet", expiresAt: updatedAt + 6_000, updatedAt };
}

describe("peer checks", () => {
  it("warns once of a peer URL nobody answers at, not of one that answers", async () => {
    const server = createServer((_request, response) => response.end("{}"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const reachable = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // A port that was just free: nothing listens there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const unreachable = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((resolve) => closed.close(resolve));
    try {
      const clock = new ManualClock();
      const lines: string[] = [];
      const checks = new PeerChecks({ clock, log: (line) => lines.push(line), peers: new PeerClient({ adminKey: "k" }), maxClockSkewMs: 1_000, beatMs: 2_000 });
      const entries = [entry("up", reachable, clock.nowMs()), entry("down", unreachable, clock.nowMs())];
      checks.check(entries);
      await eventually(() => lines.length === 1);
      expect(lines[0]).toMatch(new RegExp(`^warning: node down advertises ${unreachable.replace(/[.]/g, "\\.")}, which this node cannot reach \\(not reachable \\(ECONNREFUSED\\)\\)`));
      // Not again while it stays unreachable.
      clock.advance(60_000);
      checks.check([entry("up", reachable, clock.nowMs()), entry("down", unreachable, clock.nowMs())]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(lines).toHaveLength(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("warns once of a peer whose clock is off by more than the tolerated skew, and says when it agrees again", () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    const checks = new PeerChecks({ clock, log: (line) => lines.push(line), peers: null, maxClockSkewMs: 1_000, beatMs: 2_000 });
    checks.check([entry("ahead", null, clock.nowMs() + 5_000), entry("fine", null, clock.nowMs() - 2_500), entry("behind", null, clock.nowMs() - 10_000)]);
    checks.check([entry("ahead", null, clock.nowMs() + 5_000)]);
    expect(lines).toEqual([
      expect.stringMatching(/^warning: node ahead: its clock looks 5000 ms ahead of this node's, more than the 1000 ms the leases tolerate/),
      expect.stringMatching(/^warning: node behind: its clock looks 6000 ms behind this node's/),
    ]);
    checks.check([entry("ahead", null, clock.nowMs())]);
    expect(lines[2]).toBe("node ahead: its clock agrees with this node's again");
  });
});
