import type { App } from "../functions/index.js";

/** The page at `/` when the server has no web app: what it serves and how to reach it. */
export function statusPage(app: App): string {
  const escape = (text: string) => text.replace(/[&<>"]/g, (char) => `&#${char.charCodeAt(0)};`);
  const functions = app.paths.map((path) => `<li><code>${escape(path)}</code></li>`).join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cairn</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .25rem}</style></head>
<body><h1>Cairn is serving ${escape(app.source)}</h1>
<p>Live queries: WebSocket at <code>/api/sync</code>. One-shot calls: <code>POST /api/query</code>, <code>/api/mutation</code>, <code>/api/action</code>.
Health: <a href="/api/health"><code>/api/health</code></a>. Metrics: <a href="/metrics"><code>/metrics</code></a>.
The client library as an ES module: <code>/cairn-client.js</code>.</p>
<h2>Functions</h2><ul>${functions}</ul></body></html>
`;
}
