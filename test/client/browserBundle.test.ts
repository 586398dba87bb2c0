import { build } from "esbuild";
import { describe, expect, it } from "vitest";

/**
 * Scenario: an app bundles the client for browsers with esbuild from its public entry.
 * No file it pulls in may import a `node:` module or a Node-only package (ws).
 */
describe("the browser bundle of src/client/index.ts", () => {
  it("builds for the browser platform and includes neither node: modules nor ws", async () => {
    const result = await build({
      entryPoints: ["src/client/index.ts"],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain("src/client/CairnClient.ts");
    expect(inputs.filter((input) => input.startsWith("node:") || input.includes("node_modules/ws/"))).toEqual([]);
    // base is below every layer and browser-safe as a whole (the client's model files import it through base/index.ts).
    expect(inputs.filter((input) => input.startsWith("src/") && !/^src\/(client|sync\/protocol\.ts|model|base)\//.test(input + "/"))).toEqual([]);
    expect(inputs).not.toContain("src/client/node.ts");
  });
});
