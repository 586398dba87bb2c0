import { build, type BuildOptions } from "esbuild";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";

/**
 * Scenario: an app bundles the client for browsers with esbuild from its public entry.
 * No file it pulls in may import a `node:` module or a Node-only package (ws), and the
 * minified bundle stays small: the protocol's validators come from zod/mini, never from
 * full zod, which alone would be ~450 KB minified. The protocol module bundled the same
 * way still rejects a malformed server frame, with zod's English message, whatever zod
 * locale the page sets for its own schemas.
 */

/** What an app pays on the wire for the client; the bundle measured 21 KB gzipped when this bound was set. */
const BUNDLE_GZIPPED_BYTES_MAX = 40 * 1024;

/** The module the last test bundles: the protocol's parser, and the zod/mini and locales the page uses itself. */
interface BundledProtocol {
  parseServerMessage: typeof import("../../src/sync/protocol.js").parseServerMessage;
  z: typeof import("zod/mini");
  fr: typeof import("zod/locales").fr;
}

const browserBuild = { bundle: true, platform: "browser", format: "esm", write: false, logLevel: "silent" } satisfies BuildOptions;

describe("the browser bundle of src/client/index.ts", () => {
  it("builds for the browser platform and includes neither node: modules nor ws", async () => {
    const result = await build({ ...browserBuild, entryPoints: ["src/client/index.ts"], metafile: true });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain("src/client/CairnClient.ts");
    expect(inputs.filter((input) => input.startsWith("node:") || input.includes("node_modules/ws/"))).toEqual([]);
    // base is below every layer and browser-safe as a whole (the client's model files import it through base/index.ts).
    // From sync, only the browser-safe protocol and the result checksum the client checks diffs with.
    expect(inputs.filter((input) => input.startsWith("src/") && !/^src\/(client|sync\/protocol\.ts|sync\/resultChecksum\.ts|model|base)\//.test(input + "/"))).toEqual([]);
    expect(inputs).not.toContain("src/client/node.ts");
  });

  it(`is at most ${BUNDLE_GZIPPED_BYTES_MAX} bytes minified and gzipped, with none of full zod's API`, async () => {
    const result = await build({ ...browserBuild, entryPoints: ["src/client/index.ts"], minify: true, metafile: true });
    // The files that put code in the bundle (metafile.inputs also lists the ones tree-shaken away).
    const output = Object.values(result.metafile.outputs)[0]!;
    // Paths from node_modules/ on (node_modules may be a link elsewhere, as in a git worktree).
    const inputs = Object.entries(output.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([path]) => (path.includes("node_modules/") ? path.slice(path.lastIndexOf("node_modules/")) : path));
    expect(inputs.filter((input) => input.includes("node_modules/zod/v4/classic/") || input.includes("node_modules/zod/v3/"))).toEqual([]);
    // One locale only: the English messages the protocol parses with.
    expect(inputs.filter((input) => input.includes("node_modules/zod/v4/locales/"))).toEqual(["node_modules/zod/v4/locales/en.js"]);
    const minified = result.outputFiles[0]!.contents;
    const gzipped = gzipSync(minified, { level: 9 }).byteLength;
    console.log(`client bundle: ${minified.byteLength} bytes minified, ${gzipped} bytes gzipped`);
    expect(gzipped).toBeLessThanOrEqual(BUNDLE_GZIPPED_BYTES_MAX);
  });

  it("rejects a malformed server frame with PROTOCOL_INVALID and an English message naming the field", async () => {
    const result = await build({
      ...browserBuild,
      minify: true,
      stdin: { contents: 'export { parseServerMessage } from "./src/sync/protocol.ts"; export * as z from "zod/mini"; export { fr } from "zod/locales";', resolveDir: process.cwd(), loader: "ts" },
    });
    const source = Buffer.from(result.outputFiles[0]!.contents).toString("base64");
    const bundled = (await import(`data:text/javascript;base64,${source}`)) as BundledProtocol;
    // A page that sets zod's French locale for its own forms (zod's config is shared through globalThis).
    bundled.z.config(bundled.fr());
    try {
      const wellFormed = { type: "Broadcast", topic: "news", event: { $integer: "1" } };
      expect(bundled.parseServerMessage(JSON.stringify(wellFormed))).toEqual(wellFormed);
      const malformed = [
        { type: "Broadcast", topic: "news", event: 1, sneaky: true },
        { type: "Transition", startVersion: { querySet: -1, ts: 0 }, endVersion: { querySet: 0, ts: 0 }, modifications: [] },
        { type: "MutationResponse", requestId: 1, success: true, error: { code: "X", kind: "Y", message: "m" } },
      ];
      const messages = malformed.map((frame) => {
        try {
          bundled.parseServerMessage(JSON.stringify(frame));
          return "accepted";
        } catch (error) {
          expect(error).toMatchObject({ code: "PROTOCOL_INVALID", details: { frame: frame.type } });
          return (error as Error).message;
        }
      });
      expect(messages).toEqual([
        'invalid Broadcast frame: ✖ Unrecognized key: "sneaky"',
        "invalid Transition frame: ✖ Too small: expected number to be >=0\n  → at startVersion.querySet",
        expect.stringMatching(/^invalid MutationResponse frame: ✖ Unrecognized key: "error"\n/),
      ]);
    } finally {
      bundled.z.config({ localeError: undefined });
    }
  });
});
