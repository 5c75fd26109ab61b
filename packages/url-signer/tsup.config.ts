import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/next.ts", "src/unpic.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  // Runs in browsers too: Web Crypto only, no Node built-ins.
  target: "es2022",
  platform: "neutral",
});
