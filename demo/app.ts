/**
 * Cairn's demo app: what `npm start` serves when no `--app` is given. An app is one
 * module exporting its schema and its functions by module name ("messages:send").
 */
import * as counters from "./counters.js";
import * as messages from "./messages.js";

export { schema } from "./schema.js";
export const functions = { messages, counters };
