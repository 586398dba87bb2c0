/**
 * The server layer's public surface (`cairn/server`): start a node inside another process,
 * and what the CLI needs to assemble one.
 */
export { jwtVerifier, loadJwks } from "./JwtVerifier.js";
export type { WebApp } from "./WebAssets.js";
export { localNodeId } from "./localNodeId.js";
export { MAX_CLOCK_SKEW_MS_DEFAULT, startNode, type NodeOptions, type RunningNode } from "./startNode.js";
export { startNodeAcrossReshards } from "./startNodeAcrossReshards.js";
