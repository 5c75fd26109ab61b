import { describe, expect, it } from "vitest";
import { call, newKey, removeDir, solid, startServer, tempDataDir, upload } from "./harness.js";

// Live smoke test: only with a real provider key in the environment (no network otherwise).
const OPENAI_API_KEY = process.env.OPENAI_API_KEY;
describe("live provider smoke test", () => {
  // Skipped without OPENAI_API_KEY: CI has no provider key and no network beyond loopback.
  it.skipIf(OPENAI_API_KEY === undefined || OPENAI_API_KEY === "")(
    "visualize answers through the real OpenAI API",
    async () => {
      const dataDir = await tempDataDir();
      const server = await startServer(dataDir, {
        models: {
          registry: {
            "uform-gen": {
              baseUrl: "https://api.openai.com/v1",
              model: process.env.OPENAI_VISION_MODEL ?? "gpt-4o-mini",
              apiKeyEnv: "OPENAI_API_KEY",
            },
          },
          timeoutMs: 60_000,
        },
      });
      try {
        const live = await newKey(server, "live", "smoke");
        const id = (await upload(server.url, live, await solid(64, 64, [255, 0, 0]))).id;
        const response = await call(server.url, "POST", `/v1/images/${id}/visualize`, {
          key: live,
          json: { prompt: "Which colour fills this image? One word." },
        });
        expect(response.status, JSON.stringify(response.json)).toBe(201);
        expect(response.json.response.toLowerCase()).toContain("red");
      } finally {
        await server.close();
        await removeDir(dataDir);
      }
    },
    90_000,
  );
});
