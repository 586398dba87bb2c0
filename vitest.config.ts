import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Protocol and endpoint tests start real servers and SQLite files; give them room
    // on a loaded 2-core CI machine without ever asserting timings.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
