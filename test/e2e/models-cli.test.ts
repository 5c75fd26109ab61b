/** The built `pixport serve` CLI with a models registry in its config file, against the loopback provider. */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { chatCompletion, imagesResponse, type OpenAiCompatibleServer } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  call,
  type PrebuiltNode,
  removeDir,
  solid,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
  upload,
} from "./harness.js";
import { useLoopbackProvider } from "./loopback-provider.js";

let provider: OpenAiCompatibleServer;
useLoopbackProvider((started) => {
  provider = started;
});

describe("the built `pixport serve` with a models registry in its config file", () => {
  let dataDir: string;
  let node: PrebuiltNode | undefined;
  let url: string;
  let environment: Record<string, string>;

  beforeAll(async () => {
    dataDir = await tempDataDir();
    const configFile = path.join(dataDir, "pixport.json");
    await writeFile(
      configFile,
      JSON.stringify({
        models: {
          registry: {
            llava: { baseUrl: provider.baseUrl, model: "llava:7b", apiKeyEnv: "LOOPBACK_KEY" },
            sdxl: { baseUrl: provider.baseUrl, model: "sdxl-turbo" },
          },
          defaults: { visualize: "llava", classify: "llava", extract: "llava" },
        },
      }),
    );
    environment = { PIXPORT_LOG: "false", PIXPORT_CONFIG: configFile, LOOPBACK_KEY: "sk-from-env" };
    node = await spawnPrebuiltServer(dataDir, environment);
    url = node.url;
  }, 60_000);

  afterAll(async () => {
    if (node !== undefined) await stopPrebuiltServer(node);
    await removeDir(dataDir);
  });

  it("serves visualize, imagine and classify against the loopback provider", async () => {
    const cli = async (...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, [CLI, ...args, "--data-dir", dataDir], {
          env: { ...process.env, ...environment },
        })
      ).stdout.trim();
    const live = await cli("keys", "create", "--kind", "live", "--account", "built");
    const test = await cli("keys", "create", "--kind", "test", "--account", "built");
    const id = (await upload(url, live, await solid(32, 32, [255, 0, 0]))).id;
    provider.enqueue({ json: chatCompletion("Red.") });
    const visualize = await call(url, "POST", `/v1/images/${id}/visualize`, {
      key: live,
      json: { prompt: "?" },
    });
    expect(visualize.status, JSON.stringify(visualize.json)).toBe(201);
    expect(visualize.json).toEqual({ response: "Red." });
    expect(provider.requests[0]!.body.model).toBe("llava:7b");
    expect(provider.requests[0]!.headers.authorization).toBe("Bearer sk-from-env");

    provider.enqueue({ json: imagesResponse(await solid(1024, 1024, [0, 0, 255], "png")) });
    const imagine = await call(url, "POST", "/v1/images/imagine", {
      key: test,
      json: { name: "n", prompt: "p" },
    });
    expect(imagine.status, JSON.stringify(imagine.json)).toBe(201);
    expect(imagine.json).toMatchObject({ width: 1024, height: 1024, format: "jpeg" });
    expect(provider.requests[1]!.body.model).toBe("sdxl-turbo");

    const testId = (await upload(url, test, await solid(32, 32, [255, 0, 0]))).id;
    const masked = await call(url, "POST", `/v1/images/${testId}/classify`, { key: test });
    expect(masked.status).toBe(201);
    expect(masked.json.main_label).toBe("result masked");
    expect(provider.requests).toHaveLength(2);
  });
});
