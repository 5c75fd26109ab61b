// A bare node:http server on loopback: given a file, it streams that file for every request (the
// reference for cache hits: what a static file server or a CDN origin does for an already-made
// variant); given a directory, it serves the files in it by name, with ETag, Last-Modified and
// Cache-Control as a web server or CDN origin sends them (the origin of bench/origin.mjs).
import { createReadStream, readdirSync, statSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { reportPeakRss } from "./lib.mjs";

const TYPES = { ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp" };
const target = process.argv[2];
/** Name → [path, headers]; one entry, "", for a single file. */
const files = new Map();
const entry = (file) => {
  const stat = statSync(file);
  return [
    file,
    {
      "content-type": TYPES[path.extname(file).toLowerCase()] ?? "image/jpeg",
      "content-length": stat.size,
      etag: `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`,
      "last-modified": stat.mtime.toUTCString(),
      "cache-control": "public, max-age=3600",
    },
  ];
};
if (statSync(target).isDirectory()) {
  for (const name of readdirSync(target)) files.set(name, entry(path.join(target, name)));
} else {
  files.set("", entry(target));
}
reportPeakRss();
const server = createServer((request, response) => {
  const name = files.has("") ? "" : decodeURIComponent((request.url ?? "/").slice(1).split("?")[0]);
  const found = files.get(name);
  if (found === undefined) {
    response.writeHead(404).end();
    return;
  }
  const [file, headers] = found;
  if (request.headers["if-none-match"] === headers.etag) {
    response.writeHead(304, { etag: headers.etag, "cache-control": headers["cache-control"] }).end();
    return;
  }
  response.writeHead(200, headers);
  if (request.method === "HEAD") response.end();
  else createReadStream(file).pipe(response);
});
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
