import { defineConfig } from "tsup";

export default defineConfig({
  // registry.ts on its own too: a host can validate a model registry without loading the openai SDK.
  entry: ["src/index.ts", "src/registry.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
});
