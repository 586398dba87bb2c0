/**
 * `cairn/client/node`: the client in Node, over the `ws` package's WebSocket (Node 20 has
 * no global one), with everything `cairn/client` exports.
 */
export * from "../client/index.js";
export * from "../client/node.js";
