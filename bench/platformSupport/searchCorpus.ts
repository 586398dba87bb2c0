import { randomInt, type Random } from "../../src/base/random.js";

/** Consonant-vowel syllables: the vocabulary's words are 2–3 of them ("kato", "rumesi"). */
const CONSONANTS = "bdfgklmnprstvz";
const VOWELS = "aeiou";
const SYLLABLES = [...CONSONANTS].flatMap((consonant) => [...VOWELS].map((vowel) => consonant + vowel));

/**
 * A made-up vocabulary whose word frequencies follow Zipf's law (the word of rank r drawn
 * with probability ∝ 1 / r^exponent), as natural-language text roughly does: a few
 * words are in most documents, most words in a handful. Words are letters only, so the
 * search tokenizer keeps each one whole as one term.
 */
export class ZipfVocabulary {
  readonly words: readonly string[];
  /** cumulative[r]: the probability of a rank ≤ r (0-based). */
  private readonly cumulative: Float64Array;

  constructor(
    readonly size: number,
    readonly exponent: number,
  ) {
    // Rank r's word: r + SYLLABLES.length written in base SYLLABLES.length, so at least two syllables, no two alike.
    this.words = Array.from({ length: size }, (_, rank) => {
      let word = "";
      for (let n = rank + SYLLABLES.length; n > 0; n = Math.floor(n / SYLLABLES.length)) word = SYLLABLES[n % SYLLABLES.length] + word;
      return word;
    });
    this.cumulative = new Float64Array(size);
    let total = 0;
    for (let rank = 0; rank < size; rank++) this.cumulative[rank] = total += 1 / (rank + 1) ** exponent;
    for (let rank = 0; rank < size; rank++) this.cumulative[rank]! /= total;
  }

  /** A word drawn by frequency. */
  draw(random: Random): string {
    const u = random.float();
    let low = 0;
    let high = this.size - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.cumulative[middle]! < u) low = middle + 1;
      else high = middle;
    }
    return this.words[low]!;
  }

  /** A word of rank in [from, to) (0-based), drawn uniformly. */
  ofRank(random: Random, from: number, to: number): string {
    return this.words[from + randomInt(random, Math.min(to, this.size) - from)]!;
  }

  /** The probability of rank r's word at each draw. */
  probability(rank: number): number {
    return this.cumulative[rank]! - (rank === 0 ? 0 : this.cumulative[rank - 1]!);
  }
}

/** A document's body: `wordsMin`–`wordsMax` words drawn by frequency. */
export function documentBody(vocabulary: ZipfVocabulary, random: Random, wordsMin: number, wordsMax: number): string {
  const count = wordsMin + randomInt(random, wordsMax - wordsMin + 1);
  return Array.from({ length: count }, () => vocabulary.draw(random)).join(" ");
}
