import { S3Client } from "@aws-sdk/client-s3";
import { Redis } from "ioredis";
import { createNode } from "./app.js";

// Configuration from the environment lives here, in the composition, never in the adapters.
const env = process.env;
const s3 = new S3Client({
  region: env.AWS_REGION ?? "us-east-1",
  ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT, forcePathStyle: true } : {}),
  // Works with AWS and with every S3-compatible server (s3rver, older MinIO).
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
// Fail fast during an outage: requests get a 503 instead of waiting in ioredis' offline queue.
const redis = new Redis(env.REDIS_URL ?? "redis://127.0.0.1:6379", {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
});
await new Promise((resolve) => redis.once("ready", resolve));

const { app, createKey } = await createNode({
  s3,
  redis,
  bucket: env.S3_BUCKET ?? "pixport-private",
  publicBucket: env.S3_PUBLIC_BUCKET ?? "pixport-public",
  publicBaseUrl: env.PUBLIC_BASE_URL ?? "https://cdn.example.com",
  fastify: { logger: true },
});
app.addHook("onClose", async () => {
  redis.disconnect();
  s3.destroy();
});
const key = await createKey("test", "example");
await app.listen({ port: Number(env.PORT ?? 3000), host: "0.0.0.0" });
app.log.info({ key }, "pixport under /pixport; a fresh test key");
