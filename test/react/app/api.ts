import { apiOf } from "../../../src/client/index.js";
import type { functions } from "../tasksApp.js";

/** The test app's functions, typed from its module (a type-only import: nothing of the server is bundled). */
export const api = apiOf<typeof functions>();
