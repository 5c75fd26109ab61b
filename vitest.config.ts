import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["pixport-source"] },
  ssr: { resolve: { conditions: ["pixport-source"] } },
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "adapters/*/test/**/*.test.ts",
      "adapters/*/src/**/*.test.ts",
      "test/**/*.test.ts",
      "examples/*/test/**/*.test.ts",
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
