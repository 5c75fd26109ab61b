import { readFile, writeFile } from "node:fs/promises";
import { runChain } from "./run-chain.js";

// Usage: pnpm start <input image> [output.webp] [data dir]
const [input, output = "thumbnail.webp", dataDir = ".pixport-example-data"] = process.argv.slice(2);
if (input === undefined) {
  process.stderr.write("usage: pnpm start <input image> [output.webp] [data dir]\n");
  process.exit(2);
}
const result = await runChain({ dataDir, input: new Uint8Array(await readFile(input)) });
for (const image of result.images) {
  process.stdout.write(`${image.id} ${image.name} ${image.width}x${image.height} ${image.format}\n`);
}
await writeFile(output, result.output);
process.stdout.write(`wrote ${output}; public URL ${result.publicUrl}\n`);
