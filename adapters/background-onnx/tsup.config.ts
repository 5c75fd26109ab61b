import { copyFile } from "node:fs/promises";
import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  // The inference process and its model preparation are plain CommonJS, forked by path next to
  // the entry (src/ or dist/).
  onSuccess: async () => {
    for (const file of [
      "inference-process.cjs",
      "float16-widening.cjs",
      "tensor-graphs.cjs",
      "protobuf-wire.cjs",
    ])
      await copyFile(`src/${file}`, `dist/${file}`);
  },
});
