import { defineConfig } from "tsup";

export default defineConfig({
  // worker.ts is the entry of the codec's worker threads (loaded by URL as dist/worker.js).
  entry: ["src/index.ts", "src/worker.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
});
