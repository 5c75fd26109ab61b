import type { PixportServer } from "@pixport/server";
import { chatCompletion, type OpenAiCompatibleServer, startOpenAiCompatibleServer } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newKey, solid, upload, useServer } from "./harness.js";

// Catalogue G11: a provider failing again and again must not make every request wait for it.
// After 3 failures in a row (configured) the model's calls fail fast with 503 and Retry-After and
// reach no provider; after the cooldown one probe goes through and a success closes the circuit.

let provider: OpenAiCompatibleServer;
let server: PixportServer;
let key: string;
// Long enough that the refused call surely comes before the cooldown ends, even on a busy machine.
const COOLDOWN_MS = 2_000;

beforeAll(async () => {
  provider = await startOpenAiCompatibleServer();
});
afterAll(() => provider.close());

const running = useServer(() => ({
  models: {
    registry: { vision: { baseUrl: provider.baseUrl, model: "gemini-2.5-flash", apiKey: "sk-loopback" } },
    defaults: { visualize: "vision" },
    timeoutMs: 5_000,
  },
  modelCircuit: { failureThreshold: 3, cooldownMs: COOLDOWN_MS },
}));
beforeAll(async () => {
  server = running.server;
  key = await newKey(server, "live", "circuit");
});

describe("model circuit breaker through the server", () => {
  it("fails fast after repeated provider failures, then probes and recovers", async () => {
    const image = await upload(server.url, key, await solid(32, 32, [10, 120, 200]));
    const visualize = () =>
      call(server.url, "POST", `/v1/images/${image.id}/visualize`, { key, json: { prompt: "What is it?" } });
    provider.setHandler(() => ({ status: 500, json: { error: { message: "provider down" } } }));
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const failed = await visualize();
      expect(failed.status).toBe(502);
    }
    expect(provider.requests.length).toBe(3);

    const refused = await visualize();
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ code: "MODEL_UNAVAILABLE" });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("x-image-processing-usage")).toBe("0");
    expect(provider.requests.length).toBe(3);

    provider.setHandler(() => ({ json: chatCompletion("A blue square.") }));
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 50));
    const probe = await visualize();
    expect(probe.status).toBe(201);
    expect(provider.requests.length).toBe(4);
    const after = await visualize();
    expect(after.status).toBe(201);
    expect(provider.requests.length).toBe(5);
  });
});
