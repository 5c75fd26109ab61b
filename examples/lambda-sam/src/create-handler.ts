import path from "node:path";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  type ApiKeyRecord,
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryKeyStore,
  hashApiKey,
  type KeyKind,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createLambdaHandler, type LambdaHttpHandler } from "@pixport/http-lambda";
import { createFsBlobStore, createFsImageRepository } from "@pixport/storage-fs";

/** Configuration of the function, read from the environment by `handler.ts`. */
export interface LambdaExampleConfig {
  /** API keys (`test_...`/`live_...`) allowed to call, all for one account. */
  apiKeys: readonly string[];
  /** Where images live. Lambda's /tmp is per instance and ephemeral: a demo, not storage. */
  dataDir: string;
  /** Base URL of published copies (a CDN or bucket in front of `${dataDir}/public`). */
  publicStorageBaseUrl: string;
  /** Overrides the base URL derived from the event (e.g. a custom domain). */
  baseUrl?: string;
}

/** Reads {@link LambdaExampleConfig} from `PIXPORT_*` variables. */
export function configFromEnv(env: NodeJS.ProcessEnv): LambdaExampleConfig {
  const apiKeys = (env.PIXPORT_API_KEYS ?? "")
    .split(",")
    .map((key) => key.trim())
    .filter((key) => key !== "");
  if (apiKeys.length === 0) {
    throw new Error(
      "Set PIXPORT_API_KEYS to a comma-separated list of test_/live_ keys (template parameter ApiKeys).",
    );
  }
  return {
    apiKeys,
    dataDir: env.PIXPORT_DATA_DIR ?? "/tmp/pixport",
    publicStorageBaseUrl: env.PIXPORT_PUBLIC_STORAGE_BASE_URL ?? "https://cdn.example.com",
    baseUrl: env.PIXPORT_BASE_URL,
  };
}

/** Builds the pipeline once per cold start and returns the Lambda handler over it. */
export async function createHandler(config: LambdaExampleConfig): Promise<LambdaHttpHandler> {
  const keys = createMemoryKeyStore();
  for (const [index, key] of config.apiKeys.entries()) {
    const kind: KeyKind = key.startsWith("live_") ? "live" : "test";
    const record: ApiKeyRecord = {
      id: `key_env_${index}`,
      hash: await hashApiKey(key),
      displayPrefix: key.slice(0, 9),
      kind,
      accountId: "default",
      createdAt: new Date(0).toISOString(),
    };
    await keys.insert(record);
  }
  const blobStore = createFsBlobStore({ root: path.join(config.dataDir, "blobs") });
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: createFsImageRepository({ root: path.join(config.dataDir, "images") }),
    keys,
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: createFsBlobStore({ root: path.join(config.dataDir, "public") }),
      publicBaseUrl: config.publicStorageBaseUrl,
    }),
  });
  return createLambdaHandler(createHttpHandler(pipeline), { baseUrl: config.baseUrl });
}
