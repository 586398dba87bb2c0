import { spawn } from "node:child_process";

/** Opens `url` in the desktop's browser (`cairn dev --open`); says so if it cannot, and never fails the command. */
export function openInBrowser(url: string, say: (line: string) => void): void {
  const [command, args] =
    process.platform === "darwin" ? ["open", [url]] : process.platform === "win32" ? ["cmd", ["/c", "start", "", url]] : ["xdg-open", [url]];
  try {
    const child = spawn(command, args as string[], { stdio: "ignore", detached: true });
    child.on("error", (error) => say(`could not open a browser (${command}: ${error.message}); open the dashboard link above yourself`));
    child.unref();
  } catch (error) {
    say(`could not open a browser (${(error as Error).message}); open the dashboard link above yourself`);
  }
}
