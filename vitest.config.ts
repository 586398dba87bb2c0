import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (file: string) => fileURLToPath(new URL(`./src/package/${file}`, import.meta.url));

export default defineConfig({
  // The package's entry points (package.json "exports") as the demo and test apps import them, on the sources.
  resolve: {
    alias: [
      { find: /^cairn$/, replacement: source("index.ts") },
      { find: /^cairn\/client$/, replacement: source("client.ts") },
      { find: /^cairn\/client\/node$/, replacement: source("clientNode.ts") },
      { find: /^cairn\/react$/, replacement: source("react.ts") },
      { find: /^cairn\/server$/, replacement: source("server.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Protocol and endpoint tests start real servers and SQLite files; give them room
    // on a loaded 2-core CI machine without ever asserting timings.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The AWS SDK announces that its 2027 releases need Node 22; Node 20 is this
    // project's pinned runtime, so the notice is noise in every S3 test's output.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
  },
});
