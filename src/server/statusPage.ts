/**
 * The page at `/` when the server has no web app: how to reach what it serves. It names
 * only the public routes every Cairn server has: never the app's file path, its function
 * names or anything else a visitor could use to map the deployment.
 */
export function statusPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cairn</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .25rem}</style></head>
<body><h1>Cairn is running</h1>
<p>Live queries: WebSocket at <code>/api/sync</code>. One-shot calls: <code>POST /api/query</code>, <code>/api/mutation</code>, <code>/api/action</code>.
Health: <a href="/api/health"><code>/api/health</code></a>.
The client library as an ES module: <code>/cairn-client.js</code>.</p>
<p>To serve your app's page here, start the server with <code>--static &lt;dir&gt;</code> (the directory your build writes).</p></body></html>
`;
}
