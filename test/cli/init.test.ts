/**
 * Scenario: `cairn init` as a newcomer runs it, and as one who runs it in the wrong
 * place. A new folder gets the whole project, its package.json depending on this Cairn
 * (never on the registry's unrelated `cairn`); a folder with a package.json keeps its
 * fields and gains the scripts; a folder with other files is refused without --force, a
 * file that would be overwritten is refused even with it, and an unreadable package.json
 * is refused — each before anything is written.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runCairn } from "../support/runCairn.js";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "cairn-init-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const packageJson = (folder: string) => JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as Record<string, Record<string, string> | string>;

describe("cairn init", () => {
  it("scaffolds a new folder, depending on this Cairn by path", async () => {
    const folder = join(root, "My App");
    const result = await runCairn(["init", folder]);
    expect(result.code, result.stderr).toBe(0);
    for (const file of ["cairn/app.ts", "cairn/schema.ts", "cairn/functions.ts", "cairn/tasks.ts", "web/index.html", "web/main.ts", "tsconfig.json", ".gitignore"]) {
      expect(existsSync(join(folder, file)), file).toBe(true);
    }
    const manifest = packageJson(folder);
    expect(manifest["name"]).toBe("my-app");
    expect(manifest["type"]).toBe("module");
    expect(manifest["scripts"]).toEqual({ dev: "cairn dev", build: "cairn build", start: "cairn serve --app cairn/app.ts --static dist" });
    expect(manifest["dependencies"]).toEqual({ cairn: `file:${REPO.replace(/\/$/, "")}` });
    expect(result.stdout).toMatch(/npm run dev/);
  });

  it("makes a project whose app `cairn serve` serves without --app", async () => {
    const folder = join(root, "My App");
    const served = await runCairn(["serve", "--port", "0"], { stream: "stdout", pattern: /serving at/, signal: "SIGINT" }, { cwd: folder });
    expect(served.code, served.stderr).toBe(0);
    expect(served.stdout).toContain(`app ${join(folder, "cairn/app.ts")}: 4 function(s): tasks:add, tasks:list, tasks:remove, tasks:toggle`);
  });

  it("scaffolds a React page with --react, depending on React at the versions Cairn is tested with", async () => {
    const folder = join(root, "react-app");
    expect((await runCairn(["init", "--react", folder])).code).toBe(0);
    expect(readdirSync(join(folder, "web")).sort()).toEqual(["App.tsx", "index.html", "main.tsx"]);
    const tested = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    const manifest = packageJson(folder);
    expect(manifest["dependencies"]).toEqual({ cairn: `file:${REPO.replace(/\/$/, "")}`, react: `^${tested.devDependencies["react"]}`, "react-dom": `^${tested.devDependencies["react-dom"]}` });
    expect(Object.keys(manifest["devDependencies"] as Record<string, string>).sort()).toEqual(["@types/react", "@types/react-dom", "typescript"]);
  });

  it("keeps an existing package.json's fields, scripts and dependencies", async () => {
    const folder = join(root, "existing");
    mkdirSync(folder);
    writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "mine", version: "2.0.0", scripts: { dev: "my own dev" }, dependencies: { cairn: "file:/somewhere/cairn.tgz", left: "1.0.0" } }));
    expect((await runCairn(["init", folder])).code).toBe(0);
    const manifest = packageJson(folder);
    expect(manifest["name"]).toBe("mine");
    expect(manifest["version"]).toBe("2.0.0");
    expect(manifest["scripts"]).toEqual({ dev: "my own dev", build: "cairn build", start: "cairn serve --app cairn/app.ts --static dist" });
    expect(manifest["dependencies"]).toEqual({ cairn: "file:/somewhere/cairn.tgz", left: "1.0.0" });
  });

  it("refuses a folder with files, a clash even with --force, and a broken package.json, writing nothing", async () => {
    const busy = join(root, "busy");
    mkdirSync(join(busy, "web"), { recursive: true });
    writeFileSync(join(busy, "notes.txt"), "mine");
    const refused = await runCairn(["init", busy]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\[INVALID_ARGUMENT\] .*busy is not empty \(notes\.txt, web\)/);
    writeFileSync(join(busy, "web", "index.html"), "<p>my page</p>");
    const clash = await runCairn(["init", "--force", busy]);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/already has web\/index\.html: nothing was written/);
    expect(readdirSync(busy).sort()).toEqual(["notes.txt", "web"]);
    expect(readFileSync(join(busy, "web", "index.html"), "utf8")).toBe("<p>my page</p>");

    const broken = join(root, "broken");
    mkdirSync(broken);
    writeFileSync(join(broken, "package.json"), "{ not json");
    const invalid = await runCairn(["init", broken]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/package\.json is not valid JSON .*nothing was written/);
    expect(readdirSync(broken)).toEqual(["package.json"]);
  });
});
