import { copyFile } from "node:fs/promises";
import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  // The inference worker is plain CommonJS loaded by URL next to the entry (src/ or dist/).
  onSuccess: async () => {
    await copyFile("src/inference-worker.cjs", "dist/inference-worker.cjs");
  },
});
