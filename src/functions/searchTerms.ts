import { SEARCH_TERM_CHARS_MAX, SEARCH_TERMS_PER_DOCUMENT_MAX } from "../base/index.js";

/**
 * How text becomes search terms, the same for documents and for queries (SQLite FTS5's
 * unicode61 tokenizer, in JavaScript): Unicode-normalized (NFKD) with diacritics removed,
 * lowercased, split at every character that is not a letter or a digit. Terms are cut at
 * SEARCH_TERM_CHARS_MAX characters; a document's first SEARCH_TERMS_PER_DOCUMENT_MAX
 * distinct terms are indexed. Any string is safe: there is no query syntax to inject,
 * every character is either part of a term or a separator.
 */
const COMBINING_MARKS = /\p{M}+/gu;
const SEPARATORS = /[^\p{L}\p{N}]+/u;

export function termsOf(text: string): string[] {
  const terms: string[] = [];
  for (const raw of text.normalize("NFKD").replace(COMBINING_MARKS, "").toLowerCase().split(SEPARATORS)) {
    if (raw.length === 0) continue;
    terms.push(raw.length > SEARCH_TERM_CHARS_MAX ? [...raw].slice(0, SEARCH_TERM_CHARS_MAX).join("") : raw);
  }
  return terms;
}

/** A document's text as the index keeps it: each distinct term with how often it occurs, and the text's length in terms. */
export function termFrequencies(text: string): { readonly frequencies: Map<string, number>; readonly length: number } {
  const frequencies = new Map<string, number>();
  const terms = termsOf(text);
  for (const term of terms) {
    const count = frequencies.get(term);
    if (count !== undefined) frequencies.set(term, count + 1);
    else if (frequencies.size < SEARCH_TERMS_PER_DOCUMENT_MAX) frequencies.set(term, 1);
  }
  return { frequencies, length: terms.length };
}
