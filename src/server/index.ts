/**
 * The server layer's public surface (`cairn/server`): start a node inside another process,
 * and what the CLI needs to assemble one.
 */
export { jwtVerifier, loadJwks } from "./JwtVerifier.js";
export { RemoteJwks, type RemoteJwksOptions } from "./RemoteJwks.js";
export type { WebApp } from "./WebAssets.js";
export { CorsPolicy, isLocalhostOrigin, LOCALHOST_ORIGINS, parseCorsOrigins, type CorsOrigin, type LocalhostOrigins } from "./CorsPolicy.js";
export { StaticFiles } from "./StaticFiles.js";
export { checkHttpActionsPath, HTTP_ACTIONS_PATH_DEFAULT } from "./HttpActions.js";
export { writePrecompressedFiles } from "./precompressedFiles.js";
export { localNodeId } from "./localNodeId.js";
export { LoginCodes } from "./LoginCodes.js";
export { MAX_CLOCK_SKEW_MS_DEFAULT, startNode, type NodeOptions, type RunningNode } from "./startNode.js";
export { startNodeAcrossReshards } from "./startNodeAcrossReshards.js";
export { DEFAULT_LOCAL_DIRECTORY, DEFAULT_STORE_URL, startServer, type ServerOptions } from "./startServer.js";
