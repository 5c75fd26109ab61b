// The reference: sharp behind node:http, resizing the posted JPEG to ?width= and returning it.
// It does the same image work as pixport (JPEG decode with shrink-on-load, resize, JPEG encode at
// the same quality, auto-orientation) with no storage, auth or JSON.
import { createServer } from "node:http";
import sharp from "sharp";
import { reportPeakRss } from "./lib.mjs";

reportPeakRss();

const server = createServer(async (request, response) => {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const width = Number(new URL(request.url, "http://x").searchParams.get("width"));
  const output = await sharp(Buffer.concat(chunks), { failOn: "warning", limitInputPixels: 50_000_000 })
    .rotate()
    .resize({ width })
    .jpeg({ quality: 90 })
    .toBuffer();
  response.writeHead(200, { "content-type": "image/jpeg", "content-length": output.length });
  response.end(output);
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
