import { functionsFor } from "cairn";
import { schema } from "./schema.js";

/** Function builders typed by this app's schema: ctx.db knows the tables and their fields. */
export const { query, mutation, action, internalQuery, internalMutation } = functionsFor(schema);
