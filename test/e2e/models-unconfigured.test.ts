/** Model routes on a server without a model registry: 501s, and test keys still masked. */
import type { PixportServer } from "@pixport/server";
import type { OpenAiCompatibleServer } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newKey, removeDir, solid, startServer, tempDataDir, upload } from "./harness.js";
import { useLoopbackProvider } from "./loopback-provider.js";

let provider: OpenAiCompatibleServer;
useLoopbackProvider((started) => {
  provider = started;
});

describe("a server without a model registry", () => {
  let server: PixportServer;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await tempDataDir();
    server = await startServer(dataDir);
  });
  afterAll(async () => {
    await server.close();
    await removeDir(dataDir);
  });

  it("answers 501 naming the operation and model; test-key classify still masks", async () => {
    const live = await newKey(server, "live", "bare");
    const test = await newKey(server, "test", "bare");
    const liveImage = (await upload(server.url, live, await solid(16, 16, [255, 0, 0]))).id;
    const testImage = (await upload(server.url, test, await solid(16, 16, [255, 0, 0]))).id;
    const imagine = await call(server.url, "POST", "/v1/images/imagine", {
      key: live,
      json: { name: "x", prompt: "y" },
    });
    expect(imagine.status).toBe(501);
    expect(imagine.json).toMatchObject({ code: "MODEL_NOT_CONFIGURED" });
    expect(imagine.json.message).toMatch(/imagine.*sdxl/);
    const visualize = await call(server.url, "POST", `/v1/images/${liveImage}/visualize`, {
      key: live,
      json: { prompt: "?" },
    });
    expect(visualize.status).toBe(501);
    expect(visualize.json.message).toMatch(/visualize.*uform-gen/);
    const classify = await call(server.url, "POST", `/v1/images/${liveImage}/classify`, { key: live });
    expect(classify.status).toBe(501);
    expect(classify.json.message).toMatch(/classify/);
    const masked = await call(server.url, "POST", `/v1/images/${testImage}/classify`, { key: test });
    expect(masked.status).toBe(201);
    expect(masked.json.main_label).toBe("result masked");
    expect(provider.requests).toHaveLength(0);
  });

  it("POST /v1/images/imagine is routed to imagine, not read as an image id", async () => {
    const response = await call(server.url, "POST", "/v1/images/imagine", { json: {} });
    expect(response.status).toBe(401);
  });
});
