import type { PixportServer } from "@pixport/server";
import { type OpenAiCompatibleServer, startOpenAiCompatibleServer, waitUntil } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newKey, solid, upload, useServer } from "./harness.js";

// A client that gives up must not keep a paid model call running: when the HTTP connection closes
// before the answer, the upstream request is aborted at once (long before the model deadline),
// and nothing is billed. The provider is a loopback OpenAI-compatible server that never answers.

let provider: OpenAiCompatibleServer;
let server: PixportServer;
let key: string;

beforeAll(async () => {
  provider = await startOpenAiCompatibleServer();
});
afterAll(() => provider.close());

const running = useServer(() => ({
  models: {
    registry: { vision: { baseUrl: provider.baseUrl, model: "gemini-2.5-flash", apiKey: "sk-loopback" } },
    defaults: { visualize: "vision", classify: "vision", extract: "vision" },
    // Far longer than the test waits: only the disconnect can end the upstream call in time.
    timeoutMs: 60_000,
  },
}));
beforeAll(async () => {
  server = running.server;
  key = await newKey(server, "live", "leaver");
});

describe("a client disconnect cancels the upstream model call", () => {
  it.each([
    ["visualize", { prompt: "What is in the picture?" }],
    ["extract-formatted-text", { format: "markdown" }],
  ])("%s: the provider sees its request abandoned, and the call is not billed", async (path, body) => {
    const image = await upload(server.url, key, await solid(64, 48, [200, 40, 40]));
    const usage = async () => (await server.pipeline.usage("leaver")).images;
    const usageBefore = await usage();
    provider.reset();
    provider.setHandler(() => ({ hang: true }));
    const client = new AbortController();
    const pending = fetch(`${server.url}/v1/images/${image.id}/${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: client.signal,
    }).catch((error: unknown) => error);
    await waitUntil(() => provider.requests.length === 1, "the call reached the provider");
    expect(provider.requests[0]?.abandoned).toBeUndefined();
    client.abort();
    expect(await pending).toBeInstanceOf(Error);
    await waitUntil(() => provider.requests[0]?.abandoned === true, "pixport abandoned the upstream request");
    // The quota reservation is given back once the aborted call settles (a moment after the
    // job's slot is free: the release is the last thing the settled call does).
    await waitUntil(() => server.pipeline.load()?.active === 0, "the job ended");
    await expect.poll(usage, { timeout: 5_000 }).toBe(usageBefore);
  });
});
