import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  // Runs in browsers too: fetch, Blob and FormData only, no Node built-ins.
  target: "es2022",
  platform: "neutral",
});
