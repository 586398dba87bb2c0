/**
 * The app Cairn serves: its schema and its functions, grouped in modules and called by
 * path ("tasks:add"). `cairn dev` reloads it on every change.
 */
import * as tasks from "./tasks.js";

export { schema } from "./schema.js";
export const functions = { tasks };
