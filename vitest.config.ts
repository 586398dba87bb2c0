import { defineConfig } from "vitest/config";

export default defineConfig({
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
