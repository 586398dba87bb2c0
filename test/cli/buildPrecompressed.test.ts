/**
 * Scenario: `cairn build` (a real child process) builds a page with a script, its CSS and
 * a public/ folder, and writes brotli and gzip copies beside each compressible file of at
 * least 1 KiB — the script, the style sheet, a big JSON and page from public/ — and none
 * beside an image, a tiny file or a copy; each copy decodes to its file exactly. A node
 * serving the output sends those copies byte for byte. `cairn dev`'s builds
 * (buildWebApp without `precompress`) write none.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { buildWebApp } from "../../src/cli/buildWebApp.js";
import { rawRequest } from "../server/rawHttp.js";
import { startTestNode } from "../server/serverHarness.js";
import { runCairn } from "../support/runCairn.js";

const root = mkdtempSync(join(tmpdir(), "cairn-build-precompressed-"));
const web = join(root, "web");
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writePage(): void {
  mkdirSync(join(web, "public", "docs"), { recursive: true });
  writeFileSync(join(web, "index.html"), `<!doctype html><html><head><title>app</title></head><body><div id="app"></div><script type="module" src="./main.ts"></script></body></html>`);
  writeFileSync(join(web, "main.ts"), `import "./style.css";\nconst rows: string[] = [${Array.from({ length: 300 }, (_, i) => `"row number ${i}"`).join(", ")}];\ndocument.getElementById("app")!.textContent = rows.join("\\n");\n`);
  writeFileSync(join(web, "style.css"), Array.from({ length: 100 }, (_, i) => `.row-${i} { margin-left: ${i}px; color: #${(i * 999).toString(16).padStart(6, "0")}; }`).join("\n"));
  writeFileSync(join(web, "public", "data.json"), JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}` }))));
  writeFileSync(join(web, "public", "docs", "guide.html"), `<p>${"a guide to the app. ".repeat(100)}</p>`);
  writeFileSync(join(web, "public", "tiny.txt"), "small");
  writeFileSync(join(web, "public", "logo.png"), Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) % 256)));
}

/** Every file under `directory`, relative to it, sorted. */
function filesOf(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: "utf8" })
    .filter((file) => statSync(join(directory, file)).isFile())
    .sort();
}

describe("cairn build's precompressed copies", () => {
  it("writes .br and .gz beside each compressible file of at least 1 KiB, each decoding to its file, and the server sends them", async () => {
    writePage();
    const out = join(root, "dist");
    const run = await runCairn(["build", "--web", web, "--out", out]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const files = filesOf(out);
    const script = files.find((file) => /^assets\/main-[A-Z0-9]+\.js$/.test(file))!;
    const style = files.find((file) => /^assets\/main-[A-Z0-9]+\.css$/.test(file))!;
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    const compressed = [script, style, "data.json", "docs/guide.html"];
    expect(run.stdout).toContain(`(with ${compressed.length * 2} .br/.gz copies beside them)`);
    expect(files).toEqual([...compressed.flatMap((file) => [file, `${file}.br`, `${file}.gz`]), "index.html", "logo.png", "tiny.txt"].sort());
    for (const file of compressed) {
      const original = readFileSync(join(out, file));
      expect(original.byteLength, file).toBeGreaterThanOrEqual(1024);
      const brotli = readFileSync(join(out, `${file}.br`));
      const gzip = readFileSync(join(out, `${file}.gz`));
      expect(brotliDecompressSync(brotli).equals(original), file).toBe(true);
      expect(gunzipSync(gzip).equals(original), file).toBe(true);
      expect(brotli.byteLength).toBeLessThan(original.byteLength);
      expect(gzip.byteLength).toBeLessThan(original.byteLength);
    }

    const started = await startTestNode({ staticDir: out });
    try {
      for (const [encoding, suffix] of [["br", ".br"], ["gzip", ".gz"]] as const) {
        const answer = await rawRequest(started.node.url, `/${script}`, { headers: { "accept-encoding": encoding } });
        expect(answer.headers["content-encoding"]).toBe(encoding);
        expect(answer.body.equals(readFileSync(join(out, script + suffix)))).toBe(true);
      }
    } finally {
      await started.close();
    }
  });

  it("writes no copies for a dev build", async () => {
    writePage();
    const out = join(root, "dev-dist");
    const built = await buildWebApp(web, out, { minify: false });
    expect(built.precompressed).toEqual([]);
    expect(filesOf(out).filter((file) => file.endsWith(".br") || file.endsWith(".gz"))).toEqual([]);
    expect(existsSync(join(out, "index.html"))).toBe(true);
  });
});
