import type { Logger } from "@pixport/core";
import { z } from "zod";
import type { Route } from "./routes/route.js";
import type { HttpRequest, HttpResponse } from "./types.js";

/** Options of {@link createHttpHandler}, validated once. */
export const httpHandlerOptionsSchema = z.object({
  /**
   * Absolute base URL of the API as clients reach it (e.g. `https://api.example.com`), used for
   * list links. When absent, the binding's request-derived mount URL is used.
   */
  publicBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Name of the usage header. @default "X-Image-Processing-Usage" */
  usageHeaderName: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/)
    .default("X-Image-Processing-Usage"),
  /** Largest JSON body, bytes. @default 1 MiB */
  maxJsonBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /**
   * Uploads (multipart requests) in progress at once, from reading the body to the answer. Beyond,
   * a request is refused unread with 503 `OVERLOADED`: the memory of upload bodies stays below
   * `maxConcurrentUploads x maxUploadBytes` whatever arrives. @default 32
   */
  maxConcurrentUploads: z.number().int().min(1).max(100_000).default(32),
  /**
   * Uploads in progress at once for one account (all its keys): one tenant cannot take every
   * upload slot. Beyond, its next upload is refused unread with 503 `OVERLOADED`. @default 8
   */
  maxConcurrentUploadsPerAccount: z.number().int().min(1).max(100_000).default(8),
  /**
   * Slowest accepted upload body, bytes per second on average since it began, checked after
   * `uploadGraceMs`: a slower body is cut off with 408 `REQUEST_TIMEOUT`, so a client trickling
   * bytes cannot hold a slot for long. `0` turns the check off. @default 16384 (16 KiB/s)
   */
  minUploadBytesPerSecond: z
    .number()
    .int()
    .nonnegative()
    .default(16 * 1024),
  /** Time an upload body may take before its rate is first checked, ms. @default 10000 */
  uploadGraceMs: z.number().int().min(100).max(600_000).default(10_000),
  /**
   * When every upload slot is taken, a new upload waits briefly instead of being refused, and a
   * body of another account that has held its slot `t >= fairUploadAfterMs` with fewer than
   * `fairUploadBytesPerSecond x t/1000 x t/fairUploadAfterMs` bytes loses it to the waiting upload
   * (408 `REQUEST_TIMEOUT`): slow bodies cannot keep a well-behaved upload out, however many
   * accounts send them. `0` turns it off (a full node refuses at once). @default 65536 (64 KiB/s)
   */
  fairUploadBytesPerSecond: z
    .number()
    .int()
    .nonnegative()
    .default(64 * 1024),
  /** Time a body holds its slot before a waiting upload may take it, ms. @default 2000 */
  fairUploadAfterMs: z.number().int().min(100).max(600_000).default(2_000),
  /** Multipart overhead allowed above the upload limit before a request is refused unread. @default 64 KiB */
  multipartOverheadBytes: z
    .number()
    .int()
    .nonnegative()
    .default(64 * 1024),
});

/**
 * One answered request, for access logs and metrics. Never carries the API key: only the key's
 * record id and its account.
 */
export interface RequestEvent {
  /** The client's `X-Request-Id` when it is sane (1 to 128 of `A-Za-z0-9._:-`), else a new UUID. */
  requestId: string;
  method: string;
  /** The route's path template (`/v1/images/{image_id}/resize`), or `unmatched`. */
  route: string;
  operationId: string | undefined;
  status: number;
  durationMs: number;
  /** Bytes of the response body. */
  bytes: number;
  accountId: string | undefined;
  keyId: string | undefined;
  /** The error code of a failed request. */
  errorCode: string | undefined;
  /** A delivered variant came from the cache (`HIT`) or was computed (`MISS`); else undefined. */
  cache?: "HIT" | "MISS" | undefined;
}

export type HttpHandlerOptions = z.input<typeof httpHandlerOptionsSchema> & {
  /** The routes to serve. @default defaultRoutes (every image route and `GET /v1/openapi.json`) */
  routes?: readonly Route[];
  /**
   * Called once per answered request (after the answer is built, before it is sent), for access
   * logs and metrics. Errors it throws are ignored.
   */
  onRequestDone?: (event: RequestEvent) => void;
  /** Receives unexpected errors (with their cause). @default silent */
  logger?: Logger;
};

/** A framework-neutral request handler. */
export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

/** The validated options. */
export type HandlerSettings = z.output<typeof httpHandlerOptionsSchema>;
