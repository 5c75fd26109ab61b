// Reference for cache hits: a bare node:http server streaming one file from disk (what a static
// file server or a CDN origin does for an already-made variant).
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { reportPeakRss } from "./lib.mjs";

const file = process.argv[2];
const size = statSync(file).size;
reportPeakRss();
const server = createServer((_request, response) => {
  response.writeHead(200, { "content-type": "image/jpeg", "content-length": size });
  createReadStream(file).pipe(response);
});
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
