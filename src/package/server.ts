/**
 * `cairn/server`: start a node inside your own process — `startServer({ app: "cairn/app.ts" })`
 * with `cairn serve`'s defaults, or `startNode({ … })` with every part chosen: a store
 * from `openObjectStore("s3://…" | "./dir")`, an app from `loadApp(file)` (TypeScript is
 * compiled on load) or `App.fromModule(await import("./app.js"))`.
 */
export { App, loadApp, type AppModule } from "../functions/index.js";
export { openObjectStore, type ObjectStore, type OpenObjectStoreOptions } from "../objectstore/index.js";
export { jwtVerifier, loadJwks, MAX_CLOCK_SKEW_MS_DEFAULT, startNode, type NodeOptions, type RunningNode, type WebApp } from "../server/index.js";
export { startServer, type ServerOptions } from "../server/index.js";
export { LOCALHOST_ORIGINS, parseCorsOrigins, type CorsOrigin } from "../server/index.js";
export { RemoteJwks, type RemoteJwksOptions } from "../server/index.js";
export type { TokenVerifier, VerifiedToken } from "../sync/index.js";
