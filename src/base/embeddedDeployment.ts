/**
 * Where `cairn serve` and `startServer` keep a deployment by default: a directory bucket
 * and the local files, under `.cairn/`. Here, below every layer, so that the command line
 * names them without loading the server.
 */
export const DEFAULT_STORE_URL = ".cairn/bucket";
export const DEFAULT_LOCAL_DIRECTORY = ".cairn/local";
