import { originSettingsSchema } from "@pixport/core/internal";
import { httpOriginSourceOptionsSchema } from "@pixport/fetch-node";
import { z } from "zod";

/*
 * `delivery.origins` of the config: named origins of origin-image delivery
 * (`GET {publicStorageBaseUrl}/v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`), each an `http`
 * server, an `s3` bucket or an `fs` directory, with the delivery settings every origin has
 * (`account`, `unsigned`, `ttlSeconds`, `timeoutMs`, `fetches`).
 */

const httpOriginSchema = originSettingsSchema.extend({
  type: z.literal("http"),
  ...httpOriginSourceOptionsSchema.omit({ addressPolicy: true, resolve: true }).shape,
});

const s3OriginSchema = originSettingsSchema.extend({
  type: z.literal("s3"),
  bucket: z.string().min(3),
  /** Prefix the URL's path is appended to (empty, or ending with `/`). @default "" */
  prefix: z
    .string()
    .regex(/^(?:[A-Za-z0-9._-]+\/)*$/, 'must be empty or end with "/", e.g. "products/"')
    .default(""),
  /** @default "us-east-1" */
  region: z.string().min(1).optional(),
  endpoint: z.url({ protocol: /^https?$/ }).optional(),
  forcePathStyle: z.boolean().default(false),
  /** Absent: the AWS SDK's default chain (environment, profiles, IAM roles). */
  accessKeyId: z.string().min(1).optional(),
  secretAccessKey: z.string().min(1).optional(),
  /** @default "WHEN_REQUIRED" (every S3-compatible server) */
  checksums: z.enum(["WHEN_REQUIRED", "WHEN_SUPPORTED"]).default("WHEN_REQUIRED"),
});

const fsOriginSchema = originSettingsSchema.extend({
  type: z.literal("fs"),
  /** The directory whose files the origin serves; no path leaves it. */
  directory: z.string().min(1),
});

/** One origin of `delivery.origins`. */
export const originConfigSchema = z.discriminatedUnion("type", [
  httpOriginSchema,
  s3OriginSchema,
  fsOriginSchema,
]);
export type OriginConfig = z.output<typeof originConfigSchema>;

/** The delivery settings of an origin's config (what the core's `delivery.origins` takes). */
export function originSettingsOf(config: OriginConfig): z.input<typeof originSettingsSchema> {
  const { account, unsigned, ttlSeconds, timeoutMs, fetches } = config;
  return {
    ...(account === undefined ? {} : { account }),
    ...(unsigned === undefined ? {} : { unsigned }),
    ttlSeconds,
    timeoutMs,
    fetches,
  };
}
