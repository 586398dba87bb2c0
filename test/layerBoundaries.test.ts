/**
 * Scenario: the layer rules of DESIGN.md §1 hold over all of src/ — every layer has an
 * index.ts, no import goes up the layer order, and none goes around another layer's
 * index.ts — and the check itself catches each kind of break (an upward import, a
 * type-only import around an index, a dynamic import, a re-export) in a made-up tree.
 * (That the client's imports reach nothing a browser cannot load is test/client/browserBundle.)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { layerViolations } from "./support/houseRules.js";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "src");

describe("layer boundaries", () => {
  it("src/ imports only layers below, and only through their index.ts", () => {
    expect(layerViolations(SRC)).toEqual([]);
  });

  describe("the check", () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-layers-"));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    const tree = (files: Record<string, string>) => {
      const src = mkdtempSync(join(root, "src-"));
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(src, path)), { recursive: true });
        writeFileSync(join(src, path), text);
      }
      return src;
    };
    const base = {
      "base/index.ts": 'export { CairnError } from "./errors.js";\n',
      "base/errors.ts": "export class CairnError extends Error {}\n",
      "shard/index.ts": 'export { ShardEngine } from "./ShardEngine.js";\n',
      "shard/ShardEngine.ts": 'import { CairnError } from "../base/index.js";\nexport class ShardEngine { e = CairnError; }\n',
      "shard/catchUp.ts": 'import { ShardEngine } from "./ShardEngine.js";\nexport const x = ShardEngine;\n',
      "replica/index.ts": 'export { ShardTailer } from "./ShardTailer.js";\n',
      "replica/ShardTailer.ts": 'import type { ShardEngine } from "../shard/index.js";\nexport type ShardTailer = ShardEngine;\n',
    };

    it("passes a tree that keeps the rules", () => {
      expect(layerViolations(tree(base))).toEqual([]);
    });

    it("names the file, the line and the import that goes up a layer", () => {
      const src = tree({ ...base, "shard/catchUp.ts": 'export const x = 1;\nimport type { ShardTailer } from "../replica/index.js";\n' });
      expect(layerViolations(src)).toEqual([
        'src/shard/catchUp.ts:2 imports "../replica/index.js": up a layer — shard may not import replica; it imports only layers below it (base, objectstore, model, local, manifest, segments, snapshots, gc)',
      ]);
    });

    it("catches imports around an index.ts: type-only, dynamic, import() types and re-exports", () => {
      const src = tree({
        ...base,
        "replica/ShardTailer.ts": [
          'import type { ShardEngine } from "../shard/ShardEngine.js";',
          'export { CairnError } from "../base/errors.js";',
          'export const load = () => import("../shard/catchUp.js");',
          'export type Engine = import("../shard/ShardEngine.js").ShardEngine | ShardEngine;',
        ].join("\n"),
      });
      expect(layerViolations(src)).toEqual([
        'src/replica/ShardTailer.ts:1 imports "../shard/ShardEngine.js": around shard\'s index.ts — import from "../shard/index.js" (export the name there)',
        'src/replica/ShardTailer.ts:2 imports "../base/errors.js": around base\'s index.ts — import from "../base/index.js" (export the name there)',
        'src/replica/ShardTailer.ts:3 imports "../shard/catchUp.js": around shard\'s index.ts — import from "../shard/index.js" (export the name there)',
        'src/replica/ShardTailer.ts:4 imports "../shard/ShardEngine.js": around shard\'s index.ts — import from "../shard/index.js" (export the name there)',
      ]);
    });

    it("refuses a layer without index.ts, a folder out of the order, a file importing its own index, and an import out of src/", () => {
      const src = tree({
        ...base,
        "gc/collectGarbage.ts": "export const collect = 1;\n",
        "widgets/index.ts": "export {};\n",
        "shard/catchUp.ts": 'import { ShardEngine } from "./index.js";\nimport "../../demo/app.js";\nexport const x = ShardEngine;\n',
      });
      expect(layerViolations(src)).toEqual([
        "src/gc/ has no index.ts: give it one exporting what other layers use",
        "src/widgets/ is not a layer of LAYER_ORDER (test/support/houseRules.ts): place it in DESIGN.md §1's order",
        'src/shard/catchUp.ts:1 imports "./index.js": its own layer\'s index.ts — import the file itself (the index re-exports this one: a cycle)',
        'src/shard/catchUp.ts:2 imports "../../demo/app.js": outside src/ — src/ imports only src/ and packages',
      ]);
    });
  });
});
