import type { EncodedArgs } from "./encodeArgs.js";

/** What identifies a subscription: its path and the text of its encoded arguments. */
export type QueryToken = string & { readonly __queryToken: true };

export function queryToken(path: string, args: EncodedArgs): QueryToken {
  // A JSON array cannot be mistaken for another pair, whatever the path and text hold.
  return JSON.stringify([path, args.text]) as QueryToken;
}
