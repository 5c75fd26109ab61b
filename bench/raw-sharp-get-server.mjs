// Reference for cache misses: sharp behind node:http, reading a source file and resizing it to
// ?width= per GET (the same work as a pixport miss: read, decode with shrink-on-load, resize,
// encode JPEG at ?quality=), with no signature, cache or storage. The argument is the source file,
// or a directory whose file ?src= names (bench/delivery.mjs, rotating sources).
import { readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";
import path from "node:path";
import sharp from "sharp";
import { reportPeakRss } from "./lib.mjs";

const root = process.argv[2];
const isDirectory = (await stat(root)).isDirectory();
reportPeakRss();
const server = createServer(async (request, response) => {
  const query = new URL(request.url, "http://x").searchParams;
  const width = Number(query.get("width"));
  const quality = Number(query.get("quality") ?? 80);
  const file = isDirectory ? path.join(root, path.basename(query.get("src") ?? "")) : root;
  try {
    const output = await sharp(await readFile(file), { failOn: "warning", limitInputPixels: 50_000_000 })
      .rotate()
      .resize({ width })
      .jpeg({ quality })
      .toBuffer();
    response.writeHead(200, { "content-type": "image/jpeg", "content-length": output.length });
    response.end(output);
  } catch {
    response.writeHead(404).end();
  }
});
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
