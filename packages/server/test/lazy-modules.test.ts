import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * What a server loads depends on its configuration: the openai SDK (about 8 MB resident) only
 * with a model registry, the S3 client only with S3 storage, ioredis only with Redis, jimp only
 * as the codec. Each case starts the built server (dist, which the test command builds first) in a
 * process of its own with a module-resolution hook that logs every module it resolves, then closes
 * it.
 */
const serverEntry = pathToFileURL(path.resolve(import.meta.dirname, "../dist/index.js")).href;

async function modulesLoadedBy(config: Record<string, unknown>): Promise<string[]> {
  const directory = await mkdtemp(path.join(tmpdir(), "pixport-lazy-modules-"));
  const log = path.join(directory, "resolved.log");
  const hooks = [
    'import { appendFileSync } from "node:fs";',
    "export async function resolve(specifier, context, next) {",
    "  const result = await next(specifier, context);",
    `  appendFileSync(${JSON.stringify(log)}, result.url + "\\n");`,
    "  return result;",
    "}",
  ].join("\n");
  const script = [
    'import { register } from "node:module";',
    `register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hooks)}));`,
    `const { resolveServerConfig, startPixportServer } = await import(${JSON.stringify(serverEntry)});`,
    "const running = await startPixportServer(resolveServerConfig(JSON.parse(process.argv[1])));",
    "await running.close();",
  ].join("\n");
  try {
    const run = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        script,
        JSON.stringify({
          port: 0,
          host: "127.0.0.1",
          log: false,
          dataDir: path.join(directory, "data"),
          ...config,
        }),
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    return (await readFile(log, "utf8")).trim().split("\n");
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

const fromPackage = (name: string) => (url: string) => url.includes(`/node_modules/${name}/`);

describe("modules a server loads", () => {
  it("leaves the openai SDK alone without a model registry, and loads it with one", async () => {
    const plain = await modulesLoadedBy({});
    // The hook saw the server's own modules (the check is not vacuous).
    expect(plain.some(fromPackage("sharp"))).toBe(true);
    expect(plain.some((url) => url.includes("/vision-openai/dist/registry.js"))).toBe(true);
    expect(plain.filter(fromPackage("openai"))).toEqual([]);
    expect(plain.filter(fromPackage("@aws-sdk/client-s3"))).toEqual([]);
    expect(plain.filter(fromPackage("ioredis"))).toEqual([]);

    const withModels = await modulesLoadedBy({
      models: {
        registry: { llava: { baseUrl: "http://127.0.0.1:9/v1", model: "llava" } },
        defaults: { visualize: "llava" },
      },
    });
    expect(withModels.some(fromPackage("openai"))).toBe(true);
  }, 120_000);
});
