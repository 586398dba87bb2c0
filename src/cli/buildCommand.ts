import { resolve } from "node:path";
import { buildWebApp } from "./buildWebApp.js";

export interface BuildOptions {
  readonly web: string;
  readonly out: string;
}

/** `cairn build`: the page for production — minified, content-hashed scripts — for `cairn serve --static <out>`. */
export async function buildCommand(options: BuildOptions): Promise<void> {
  const built = await buildWebApp(options.web, options.out, { minify: true, precompress: true });
  const copies = built.precompressed.length === 0 ? "" : ` (with ${built.precompressed.length} .br/.gz copies beside them)`;
  process.stdout.write(`cairn: built ${resolve(options.out)}: index.html, ${built.assets.join(", ")}${copies}\n`);
}
