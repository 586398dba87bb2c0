/** One-time dashboard login codes: spent on first use, lapsed after their TTL, bounded in number, never guessable by prefix. */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { LOGIN_CODE_TTL_MS } from "../../src/base/limits.js";
import { LoginCodes } from "../../src/server/LoginCodes.js";

describe("LoginCodes", () => {
  it("redeems a code once", () => {
    const codes = new LoginCodes(new ManualClock(0), new SeededRandom(1));
    const code = codes.issue();
    expect(codes.redeem(code)).toBe(true);
    expect(codes.redeem(code)).toBe(false);
  });

  it("refuses unknown codes, prefixes and extensions of a real one", () => {
    const codes = new LoginCodes(new ManualClock(0), new SeededRandom(2));
    const code = codes.issue();
    for (const guess of ["", "0", code.slice(0, -1), `${code}0`, code.toUpperCase() === code ? "x" : code.toUpperCase()]) expect(codes.redeem(guess)).toBe(false);
    expect(codes.redeem(code)).toBe(true);
  });

  it("lets a code lapse after its TTL", () => {
    const clock = new ManualClock(0);
    const codes = new LoginCodes(clock, new SeededRandom(3));
    const code = codes.issue();
    clock.advance(LOGIN_CODE_TTL_MS);
    expect(codes.redeem(code)).toBe(false);
  });

  it("keeps a bounded number of codes: the oldest is forgotten", () => {
    const codes = new LoginCodes(new ManualClock(0), new SeededRandom(4));
    const issued = Array.from({ length: 20 }, () => codes.issue());
    expect(codes.redeem(issued[0]!)).toBe(false);
    expect(codes.redeem(issued[19]!)).toBe(true);
  });
});
