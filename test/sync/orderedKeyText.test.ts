import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { compareBytes } from "../../src/model/index.js";
import { orderedKeyText } from "../../src/sync/orderedKeyText.js";

/**
 * Order keys travel as text the client compares with `<` (issue 30): the text must sort
 * exactly as the key bytes do, prefixes and all lengths mod 3 included, and tell distinct
 * keys apart. Checked over random keys drawn to share prefixes and to end in 0x00/0xff.
 */
describe("ordered key text", () => {
  it("sorts as the bytes do and is one-to-one", () => {
    const random = new SeededRandom(3);
    const keys: Uint8Array[] = [new Uint8Array(0)];
    for (let i = 0; i < 3000; i++) {
      const base = keys[randomInt(random, keys.length)]!;
      const tail = Array.from({ length: randomInt(random, 5) }, () => [0, 1, 0x7f, 0x80, 0xfe, 0xff, randomInt(random, 256)][randomInt(random, 7)]!);
      keys.push(new Uint8Array([...base.slice(0, randomInt(random, base.length + 1)), ...tail]));
    }
    const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
    for (let i = 0; i < 20_000; i++) {
      const a = keys[randomInt(random, keys.length)]!;
      const b = keys[randomInt(random, keys.length)]!;
      const textA = orderedKeyText(a);
      const textB = orderedKeyText(b);
      expect(sign(textA < textB ? -1 : textA > textB ? 1 : 0), `${Buffer.from(a).toString("hex")} vs ${Buffer.from(b).toString("hex")}`).toBe(sign(compareBytes(a, b)));
    }
    expect(orderedKeyText(new Uint8Array([0]))).not.toBe(orderedKeyText(new Uint8Array([0, 0])));
  });
});
