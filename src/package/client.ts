/**
 * `cairn/client`: the client library, for browsers and for Node ≥ 22 (which has a global
 * WebSocket); on Node 20 use `createNodeClient` from `cairn/client/node`. Browser-safe:
 * nothing here imports a Node module.
 */
export * from "../client/index.js";
