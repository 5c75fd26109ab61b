import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createMemoryKeyStore, isImagePipelineError, type ModelPorts } from "@pixport/core";
import { afterEach, describe, expect, it } from "vitest";
import {
  type DependencyContainer,
  pixportDataPaths,
  registerPixport,
  resolve,
  container as rootContainer,
  Tokens,
} from "../src/index.js";

const dirs: string[] = [];
const scopes: DependencyContainer[] = [];
afterEach(async () => {
  await Promise.all(scopes.splice(0).map((scope) => resolve(scope, Tokens.Lifecycle).close()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "pixport-composition-"));
  dirs.push(dir);
  return dir;
}

async function compose(
  config: Parameters<typeof registerPixport>[1],
  scope = rootContainer.createChildContainer(),
) {
  await registerPixport(scope, config);
  scopes.push(scope);
  return scope;
}

describe("registerPixport's config", () => {
  it("refuses settings that need another one, naming every problem", async () => {
    const error = await registerPixport(rootContainer.createChildContainer(), {
      storage: "fs",
      metadata: "redis",
    }).catch((caught: unknown) => caught);
    expect(isImagePipelineError(error)).toBe(true);
    expect((error as Error).message).toContain('storage "fs" needs dataDir');
    expect((error as Error).message).toContain('metadata "redis" needs redisUrl');
    await expect(registerPixport(rootContainer.createChildContainer(), { storage: "s3" })).rejects.toThrow(
      /storage "s3" needs s3\.bucket/,
    );
  });

  it("refuses an unknown key (a typo is not silently ignored)", async () => {
    await expect(
      registerPixport(rootContainer.createChildContainer(), { dataDri: "/tmp/x" } as never),
    ).rejects.toThrow(/dataDri/);
  });
});

describe("the file layout of a data directory", () => {
  it("keeps records, keys, account flags and quota counters under pixportDataPaths", async () => {
    const dataDir = await tempDir();
    const scope = await compose({ storage: "fs", dataDir });
    const paths = pixportDataPaths(dataDir);
    const keys = resolve(scope, Tokens.KeyStore);
    await keys.insert({
      id: "key_layout",
      hash: "a".repeat(64),
      displayPrefix: "test_abcd",
      kind: "test",
      accountId: "layout",
      createdAt: new Date(0).toISOString(),
    });
    await resolve(scope, Tokens.AccountStore).setUpgraded("layout", true);
    const quota = resolve(scope, Tokens.QuotaStore);
    // Uncapped counts are batched in memory; closing writes them.
    await quota.reserve({ accountId: "layout", period: "2026-11", units: 3, limit: Number.MAX_SAFE_INTEGER });
    await resolve(scope, Tokens.Lifecycle).close();
    for (const directory of [paths.keys, paths.accounts, paths.quota]) {
      expect((await stat(directory)).isDirectory()).toBe(true);
    }
    // A second composition over the same directory (the CLI next to a server) reads what was written.
    const next = await compose({ storage: "fs", dataDir });
    expect(await resolve(next, Tokens.QuotaStore).usage("layout", "2026-11")).toBe(3);
    expect((await resolve(next, Tokens.KeyStore).list()).map((record) => record.id)).toEqual(["key_layout"]);
  });

  it("sweeps old temp files of its file stores when asked, and leaves other files alone", async () => {
    const dataDir = await tempDir();
    const paths = pixportDataPaths(dataDir);
    const leftovers = [path.join(paths.blobs, "images", "x.png~tmp"), path.join(paths.keys, "k.json~tmp")];
    const kept = path.join(paths.blobs, "images", "kept.png");
    for (const file of [...leftovers, kept]) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, "x");
      // Only temp files older than ten minutes are someone else's crashed write.
      await utimes(file, new Date(0), new Date(0));
    }
    const scope = await compose({ storage: "fs", dataDir });
    await resolve(scope, Tokens.Lifecycle).sweepTemporaryFiles();
    for (const file of leftovers) await expect(stat(file)).rejects.toThrow(/ENOENT/);
    expect((await stat(kept)).isFile()).toBe(true);
  });

  it("makes the delivery signing key once (mode 0600) and signs with it after a restart", async () => {
    const dataDir = await tempDir();
    const first = resolve(await compose({ dataDir }), Tokens.VariantSigner);
    const signature = await first.sign("/image_abc/w_200.jpeg");
    const file = pixportDataPaths(dataDir).signingKey;
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, "utf8")).trim().length).toBeGreaterThanOrEqual(32);
    const second = resolve(await compose({ dataDir }), Tokens.VariantSigner);
    expect(await second.sign("/image_abc/w_200.jpeg")).toBe(signature);
    // Configured keys win over the file.
    const configured = resolve(
      await compose({ dataDir, delivery: { signingKeys: ["a-configured-signing-key"] } }),
      Tokens.VariantSigner,
    );
    expect(await configured.sign("/image_abc/w_200.jpeg")).not.toBe(signature);
  });

  it("without a data directory signs with a key of this composition only", async () => {
    const one = resolve(await compose({}), Tokens.VariantSigner);
    const other = resolve(await compose({}), Tokens.VariantSigner);
    expect(await one.sign("/x")).not.toBe(await other.sign("/x"));
  });
});

describe("replacing adapters by token", () => {
  it("builds the embedded OCR by default and names its engine", async () => {
    const scope = await compose({ ocrEngine: "wasm" });
    expect(resolve(scope, Tokens.Lifecycle).ocrEngine).toBe("wasm");
    expect(resolve(scope, Tokens.Models).textExtractor).toBeDefined();
  });

  it("builds no model ports and no OCR for a registered Models, and keeps a registered key store", async () => {
    const scope = rootContainer.createChildContainer();
    const models: ModelPorts = {};
    const keys = createMemoryKeyStore();
    scope.register(Tokens.Models, { useValue: models });
    scope.register(Tokens.KeyStore, { useValue: keys });
    await compose({ dataDir: await tempDir() }, scope);
    expect(resolve(scope, Tokens.Models)).toBe(models);
    expect(resolve(scope, Tokens.KeyStore)).toBe(keys);
    expect(resolve(scope, Tokens.Lifecycle).ocrEngine).toBeUndefined();
  });

  it("wraps the codec it builds with instrumentCodec, not a registered one", async () => {
    const wrapped: string[] = [];
    const scope = rootContainer.createChildContainer();
    await registerPixport(
      scope,
      {},
      {
        instrumentCodec: (codec) => {
          wrapped.push(codec.name);
          return codec;
        },
      },
    );
    scopes.push(scope);
    expect(wrapped).toEqual([resolve(scope, Tokens.Codec).name]);
  });

  it("closes once: a second close waits for the first", async () => {
    const scope = await compose({});
    const lifecycle = resolve(scope, Tokens.Lifecycle);
    resolve(scope, Tokens.Pipeline);
    const first = lifecycle.close();
    expect(lifecycle.close()).toBe(first);
    await first;
  });
});
