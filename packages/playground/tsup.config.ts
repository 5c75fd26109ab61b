import { copyFileSync } from "node:fs";
import { defineConfig } from "tsup";

export default defineConfig([
  {
    // The handler that serves the pages (Node).
    entry: ["src/index.ts"],
    format: ["esm"],
    dts: true,
    sourcemap: true,
    // Not `clean`: the two builds run at once, and the browser one cleans its own dist/site.
    clean: false,
    target: "node20",
    platform: "node",
  },
  {
    // The pages' scripts, for browsers: everything they import (the client) is bundled in.
    entry: { playground: "app/main.ts", docs: "app/docs.ts" },
    outDir: "dist/site",
    format: ["iife"],
    outExtension: () => ({ js: ".js" }),
    minify: true,
    clean: true,
    target: "es2020",
    platform: "browser",
    noExternal: [/.*/],
    esbuildOptions(options) {
      options.conditions = ["pixport-source"];
    },
    onSuccess: async () => {
      copyFileSync("app/index.html", "dist/site/index.html");
      copyFileSync("app/style.css", "dist/site/playground.css");
    },
  },
]);
