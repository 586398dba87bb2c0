/**
 * The CLI is the top layer: nothing in src/ imports it, and `cairn` runs main.ts (which
 * parses process.argv when loaded, so it is not re-exported here). Its commands, for a
 * program that runs one without the argument parser:
 */
export { gcCommand, type GcOptions } from "./gcCommand.js";
export { inspectCommand } from "./inspectCommand.js";
export { RESHARD_HEAP_MIB_DEFAULT, reshardCommand, type ReshardCommandOptions } from "./reshardCommand.js";
export { DEMO_APP_PATH, DEMO_WEB_APP, serveCommand, type ServeOptions } from "./serveCommand.js";
export { verifyCommand, type VerifyOptions } from "./verifyCommand.js";
