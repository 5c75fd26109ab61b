import type { S3Client } from "@aws-sdk/client-s3";
import { createSharpCodec } from "@pixport/codec-sharp";
import { createImagePipeline, generateApiKey, generateKeyId, hashApiKey } from "@pixport/core";
import { fastifyPixport } from "@pixport/http-fastify";
import {
  createRedisAccountStore,
  createRedisImageRepository,
  createRedisKeyStore,
  createRedisQuotaStore,
  createRedisRateLimiter,
} from "@pixport/redis";
import { type CdnPurger, createS3BlobStore, createS3Publisher } from "@pixport/storage-s3";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Redis } from "ioredis";

/** What one stateless node needs; every node of the deployment gets the same values. */
export interface NodeOptions {
  /** Constructed by the caller (see `server.ts`), shared by every adapter, closed by the caller. */
  s3: S3Client;
  /** Constructed by the caller, shared by every Redis adapter, closed by the caller. */
  redis: Redis;
  /** Private bucket: originals and derived images under `pixport/images/`. */
  bucket: string;
  /** Bucket behind the CDN: published copies under `images/{id}.{ext}`. */
  publicBucket: string;
  /** The CDN's URL (maps to the public bucket's root). */
  publicBaseUrl: string;
  /** Optional CDN purge on unpublish and delete (CloudFront invalidation, ...). */
  purge?: CdnPurger;
  fastify?: FastifyServerOptions;
}

/**
 * One stateless node: pixport under `/pixport` on Fastify, with bytes in S3 and everything else
 * (image metadata, API keys, accounts, rate limits, quota) in Redis. Run as many as you like behind
 * a load balancer; none of them keeps state on its disk.
 */
export async function createNode(options: NodeOptions): Promise<{
  app: FastifyInstance;
  createKey: (kind: "test" | "live", accountId: string, options?: { upgraded?: boolean }) => Promise<string>;
}> {
  const source = { bucket: options.bucket, prefix: "pixport/" };
  const target = { bucket: options.publicBucket, prefix: "" };
  const redis = { client: options.redis, prefix: "pixport:" };
  const keys = createRedisKeyStore(redis);
  const accounts = createRedisAccountStore(redis);
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore: createS3BlobStore({ client: options.s3, ...source }),
    images: createRedisImageRepository(redis),
    keys,
    accounts,
    rateLimiter: createRedisRateLimiter(redis),
    quota: createRedisQuotaStore(redis),
    publisher: createS3Publisher({
      client: options.s3,
      source,
      target,
      publicBaseUrl: options.publicBaseUrl,
      ...(options.purge === undefined ? {} : { purge: options.purge }),
    }),
  });

  const app = Fastify(options.fastify);
  app.get("/health", async () => ({ status: "ok" }));
  await app.register(fastifyPixport, { prefix: "/pixport", pipeline });

  return {
    app,
    async createKey(kind, accountId, keyOptions = {}) {
      if (keyOptions.upgraded) await accounts.setUpgraded(accountId, true);
      const key = generateApiKey(kind);
      await keys.insert({
        id: generateKeyId(),
        hash: await hashApiKey(key),
        displayPrefix: key.slice(0, 9),
        kind,
        accountId,
        createdAt: new Date().toISOString(),
      });
      return key;
    },
  };
}
