import { resolve, sep } from "node:path";
import { watch, type FSWatcher } from "chokidar";
import type { Clock, Timer } from "../base/index.js";

/** Folders of a project that are never the app's sources: packages, Cairn's own files, build output, version control. */
const IGNORED_FOLDERS = new Set(["node_modules", ".cairn", "dist", ".git"]);
/** Editors' backup and swap files. */
const EDITOR_DEBRIS = /(~|\.swp|\.swx|\.tmp|#)$/;
/** How long changes gather before one reload: an editor's save touches several files in a burst. */
export const DEV_CHANGES_SETTLE_MS = 80;

/**
 * Watches a project folder for `cairn dev` (chokidar: Node's recursive fs.watch misses
 * in-place writes on Linux in Node 20), and calls `onChanges` with the absolute paths
 * changed once a burst of changes settled. Calls never overlap: changes during one are
 * gathered for the next.
 */
export class ProjectWatcher {
  private readonly watcher: FSWatcher;
  private readonly changed = new Set<string>();
  private timer: Timer | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    directory: string,
    private readonly clock: Clock,
    private readonly onChanges: (paths: readonly string[]) => Promise<void>,
    onError: (error: Error) => void,
  ) {
    const root = resolve(directory);
    const ignored = (path: string) => {
      const inside = path.startsWith(root + sep) ? path.slice(root.length + 1) : null;
      return inside !== null && (IGNORED_FOLDERS.has(inside.split(sep)[0]!) || EDITOR_DEBRIS.test(inside));
    };
    this.watcher = watch(root, { ignoreInitial: true, ignored });
    this.watcher.on("all", (_event, path) => {
      if (this.closed) return;
      this.changed.add(resolve(root, path));
      this.schedule();
    });
    this.watcher.on("error", (error) => onError(error as Error));
  }

  /** Resolves once the initial scan is done: changes from then on are reported. */
  ready(): Promise<void> {
    return new Promise((done) => this.watcher.once("ready", () => done()));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.watcher.close();
    await this.running;
  }

  private schedule(): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimer(DEV_CHANGES_SETTLE_MS, () => {
      this.timer = null;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.running !== null || this.closed || this.changed.size === 0) return;
    const paths = [...this.changed];
    this.changed.clear();
    this.running = this.onChanges(paths).finally(() => {
      this.running = null;
      if (this.changed.size > 0) this.schedule();
    });
    await this.running;
  }
}
