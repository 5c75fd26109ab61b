import { describe, expect, it } from "vitest";
import { loadServerConfig, resolveServerConfig } from "../src/config.js";

describe("storage and metadata config", () => {
  it("defaults to the data directory for bytes and records", () => {
    const config = resolveServerConfig({});
    expect(config.storage).toBe("fs");
    expect(config.metadata).toBe("fs");
    expect(config.s3).toBeUndefined();
  });

  it("reads s3 options from the environment, the region from AWS_REGION, and fills defaults", async () => {
    const config = await loadServerConfig({
      environment: {
        PIXPORT_STORAGE: "s3",
        PIXPORT_METADATA: "redis",
        PIXPORT_REDIS_URL: "redis://127.0.0.1:6379",
        PIXPORT_S3_BUCKET: "private-bucket",
        PIXPORT_S3_ENDPOINT: "http://127.0.0.1:4568",
        PIXPORT_S3_FORCE_PATH_STYLE: "true",
        PIXPORT_S3_PUBLIC_BUCKET: "public-bucket",
        AWS_REGION: "eu-west-1",
      },
    });
    expect(config.storage).toBe("s3");
    expect(config.metadata).toBe("redis");
    expect(config.s3).toEqual({
      bucket: "private-bucket",
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:4568",
      forcePathStyle: true,
      publicBucket: "public-bucket",
      prefix: "",
      publicPrefix: "public/",
      checksums: "WHEN_REQUIRED",
    });
  });

  it("merges s3 options from the file, the environment and overrides, later ones winning", async () => {
    const config = await loadServerConfig({
      environment: { PIXPORT_S3_BUCKET: "from-env", PIXPORT_S3_REGION: "us-west-2" },
      overrides: { storage: "s3", s3: { prefix: "p/" } },
    });
    expect(config.s3).toMatchObject({ bucket: "from-env", region: "us-west-2", prefix: "p/" });
  });

  it("fails with a fix when storage s3 has no bucket or metadata redis has no redisUrl", () => {
    expect(() => resolveServerConfig({ storage: "s3" })).toThrow(/PIXPORT_S3_BUCKET/);
    expect(() => resolveServerConfig({ metadata: "redis" })).toThrow(/PIXPORT_REDIS_URL/);
  });

  it("refuses half credentials, bad prefixes and unknown s3 keys", () => {
    expect(() => resolveServerConfig({ storage: "s3", s3: { bucket: "abc", accessKeyId: "AKIA" } })).toThrow(
      /accessKeyId and secretAccessKey/,
    );
    expect(() => resolveServerConfig({ storage: "s3", s3: { bucket: "abc", prefix: "x" } })).toThrow(
      /s3\.prefix/,
    );
    expect(() => resolveServerConfig({ storage: "s3", s3: { bucket: "abc", acl: "public" } })).toThrow(/s3/);
  });
});
