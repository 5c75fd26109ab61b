/**
 * The S3 (s3rver) and Redis stores that prebuilt-server processes share in the scale-out suites.
 * Kept out of `harness.ts` so the suites that need none of it do not load the AWS SDK.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { startRedisServer, startS3Server, type TestRedisServer, type TestS3Server } from "@pixport/testing";
import { type PrebuiltNode, spawnPrebuiltServer, tempDataDir } from "./harness.js";

/**
 * An AWS SDK client on a test s3rver: path-style, with checksums only where an operation requires
 * them (s3rver would store the SDK's default streaming checksum trailer as object bytes).
 */
export function s3ClientOf(s3: TestS3Server): S3Client {
  return new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: s3.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** One s3rver and one Redis, with an SDK client on the s3rver (see {@link startSharedStores}). */
export interface SharedStores {
  readonly s3: TestS3Server;
  readonly redis: TestRedisServer;
  readonly client: S3Client;
  /**
   * The environment that puts a prebuilt server's originals and variants on `bucket` under
   * `pixport/` and its records and counters on Redis.
   */
  readonly environment: (bucket: string) => Record<string, string>;
  /** Destroys the client and stops both servers. */
  stop(): Promise<void>;
}

/** Starts an s3rver with `buckets` and a Redis server. */
export async function startSharedStores(buckets: readonly string[]): Promise<SharedStores> {
  const [s3, redis] = await Promise.all([startS3Server(buckets), startRedisServer()]);
  const client = s3ClientOf(s3);
  return {
    s3,
    redis,
    client,
    environment: (bucket) => ({
      PIXPORT_REDIS_URL: redis.url,
      PIXPORT_STORAGE: "s3",
      PIXPORT_METADATA: "redis",
      PIXPORT_S3_BUCKET: bucket,
      PIXPORT_S3_PREFIX: "pixport/",
      PIXPORT_S3_ENDPOINT: s3.endpoint,
      PIXPORT_S3_REGION: s3.region,
      PIXPORT_S3_FORCE_PATH_STYLE: "true",
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    }),
    async stop() {
      client.destroy();
      await Promise.all([s3.stop(), redis.stop()]);
    },
  };
}

/**
 * Starts the built `pixport serve` with `environment` on its own empty, unshared data directory
 * (the caller removes it): with `storage: s3` and `metadata: redis` nothing an image needs may
 * live in it, so what the nodes share can only be on S3 and Redis.
 */
export async function spawnStatelessNode(
  environment: Record<string, string>,
): Promise<PrebuiltNode & { dataDir: string }> {
  const dataDir = await tempDataDir();
  return { ...(await spawnPrebuiltServer(dataDir, environment)), dataDir };
}
