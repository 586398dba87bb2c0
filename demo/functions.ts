import { functionsFor } from "cairn";
import { schema } from "./schema.js";

/** The demo app's function builders, typed by its schema. */
export const { query, mutation, action, internalQuery, internalMutation } = functionsFor(schema);
