import { functionsFor } from "../src/functions/index.js";
import { schema } from "./schema.js";

/** The demo app's function builders, typed by its schema. */
export const { query, mutation, action, internalQuery, internalMutation } = functionsFor(schema);
