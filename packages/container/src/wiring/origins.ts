import path from "node:path";
import type { OriginSource } from "@pixport/core";
import { createHttpOriginSource } from "@pixport/fetch-node";
import { createFsOriginSource } from "@pixport/storage-fs";
import type { ResolvedPixportContainerConfig } from "../config.js";
import type { OwnedResources } from "../lifecycle.js";
import type { OriginConfig } from "../origin-config.js";
import { importOptional } from "./optional-import.js";

type S3Origin = Extract<OriginConfig, { type: "s3" }>;

/**
 * The sources of `delivery.origins`: an http origin on the SSRF-safe origin fetcher, an s3 origin
 * on its own S3 client (the SDK is imported only when one is configured; the container owns the
 * client), an fs origin on its directory (relative to the working directory).
 */
export async function createOriginSources(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
): Promise<Record<string, OriginSource>> {
  const sources: Record<string, OriginSource> = {};
  for (const [name, origin] of Object.entries(settings.delivery.origins)) {
    if (origin.type === "http") {
      const {
        type: _type,
        account: _a,
        unsigned: _u,
        ttlSeconds: _t,
        timeoutMs: _m,
        fetches: _f,
        ...http
      } = origin;
      sources[name] = createHttpOriginSource(http);
    } else if (origin.type === "fs") {
      sources[name] = createFsOriginSource({ directory: path.resolve(origin.directory) });
    } else {
      sources[name] = await createS3Origin(origin, owned);
    }
  }
  return sources;
}

async function createS3Origin(origin: S3Origin, owned: OwnedResources): Promise<OriginSource> {
  const [{ S3Client }, { createS3OriginSource }] = await Promise.all([
    importOptional(() => import("@aws-sdk/client-s3"), "@aws-sdk/client-s3", 'an "s3" origin'),
    importOptional(() => import("@pixport/storage-s3"), "@pixport/storage-s3", 'an "s3" origin'),
  ]);
  const client = new S3Client({
    region: origin.region ?? "us-east-1",
    ...(origin.endpoint === undefined ? {} : { endpoint: origin.endpoint }),
    forcePathStyle: origin.forcePathStyle,
    ...(origin.accessKeyId === undefined || origin.secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId: origin.accessKeyId, secretAccessKey: origin.secretAccessKey } }),
    requestChecksumCalculation: origin.checksums,
    responseChecksumValidation: origin.checksums,
  });
  owned.connections.push(async () => client.destroy());
  return createS3OriginSource({ client, bucket: origin.bucket, prefix: origin.prefix });
}
