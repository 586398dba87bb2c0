import { extname } from "node:path";

/**
 * The `Content-Type` of the files a built web app holds (vite, esbuild, webpack output and
 * what their public/ folders usually carry), by extension; anything else is sent as bytes.
 */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".cjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".csv": "text/csv; charset=utf-8",
  ".xml": "application/xml; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".wasm": "application/wasm",
  ".pdf": "application/pdf",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".wav": "audio/wav",
};

const BYTES = "application/octet-stream";

export function contentTypeOf(fileName: string): string {
  return CONTENT_TYPES[extname(fileName).toLowerCase()] ?? BYTES;
}

/**
 * Whether compressing a body of this type pays: text and text-like formats shrink to a
 * third or less; images, fonts (woff2 is brotli inside), media and archives are compressed
 * already and would only cost CPU.
 */
export function isCompressible(contentType: string): boolean {
  const type = contentType.split(";")[0]!.trim();
  return type.startsWith("text/") || ["application/json", "application/manifest+json", "application/xml", "image/svg+xml", "application/wasm", "image/x-icon", "font/ttf", "font/otf"].includes(type);
}
