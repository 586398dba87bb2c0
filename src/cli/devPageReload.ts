import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The file a dev page polls: its `build` changes with every build of the page. */
export const DEV_BUILD_FILE = "cairn-dev-build.json";
/** How often a dev page asks whether it was rebuilt. */
const POLL_MS = 1_000;

/**
 * `cairn dev`'s page reload: after each build of the page, the page in `outDirectory`
 * gets a small script that polls DEV_BUILD_FILE and reloads the page when a newer build
 * is there. Polling a static file needs nothing of the server; a production build
 * (`cairn build`) never has the script. The app's functions need no reload: live
 * queries re-run on new code by themselves.
 */
export function markDevBuild(outDirectory: string, build: string): void {
  writeFileSync(join(outDirectory, DEV_BUILD_FILE), JSON.stringify({ build }));
  const page = join(outDirectory, "index.html");
  const html = readFileSync(page, "utf8");
  const script = `<script type="module">
// cairn dev: reload this page when it is rebuilt (not in cairn build's output).
const built = ${JSON.stringify(build)};
const check = async () => {
  try {
    const answer = await fetch("/${DEV_BUILD_FILE}", { cache: "no-store" });
    if (answer.ok && (await answer.json()).build !== built) return location.reload();
  } catch {}
  setTimeout(check, ${POLL_MS});
};
setTimeout(check, ${POLL_MS});
</script>`;
  writeFileSync(page, html.includes("</body>") ? html.replace("</body>", `${script}\n</body>`) : `${html}\n${script}\n`);
}
