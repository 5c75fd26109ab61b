import type { IncomingHttpHeaders } from "node:http";
import { Readable } from "node:stream";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { formatBytes } from "@pixport/core/adapter-kit";
import { validationError } from "@pixport/core/internal";
import busboy from "busboy";
import type { HttpRequest } from "./types.js";

/** Limits of {@link parseMultipartUpload}. */
export interface MultipartLimits {
  /** Largest accepted file, bytes; a larger file is a 422 on the file field, never truncated. */
  maxFileBytes: number;
  /** Name of the one file field. @default "image" */
  fileField?: string;
  /** Most text fields. @default 10 */
  maxFields?: number;
  /** Longest text field value, bytes. @default 1024 */
  maxFieldBytes?: number;
  /** Most parts in all. @default 20 */
  maxParts?: number;
  /**
   * Slowest accepted upload, as the average rate since the body began, checked once a second
   * after `graceMs`: a slower body (a client trickling bytes to hold an upload slot) is refused
   * with `REQUEST_TIMEOUT`. `0` turns the check off. @default 0
   */
  minBytesPerSecond?: number;
  /** Time before the rate is first checked, ms. @default 10000 */
  graceMs?: number;
  /** Ends the upload with the signal's reason (its admission took the slot back). */
  abort?: AbortSignal;
  /** Told the size of every body chunk as it arrives. */
  onBytes?: (bytes: number) => void;
}

/** A parsed multipart upload: text fields and the single file. */
export interface MultipartUpload {
  /** Text fields by name (a `Map`, so names such as `__proto__` are inert). First value wins. */
  fields: Map<string, string>;
  /** The file's bytes, or `undefined` when no file part named `fileField` was sent. */
  file: Uint8Array | undefined;
}

const badRequest = (message: string) => new ImagePipelineError(ErrorCodes.BAD_REQUEST, message);

/** A busboy parser for the request's `Content-Type` with the upload's hard limits. */
function createParser(request: HttpRequest, limits: MultipartLimits): busboy.Busboy {
  const contentType = request.headers["content-type"];
  const headers: IncomingHttpHeaders = {
    "content-type": Array.isArray(contentType) ? contentType[0] : contentType,
  };
  try {
    return busboy({
      headers,
      limits: {
        // One byte of slack: busboy flags a file that reaches its limit exactly; we decide on `total`.
        fileSize: limits.maxFileBytes + 1,
        files: 1,
        fields: limits.maxFields ?? 10,
        fieldSize: limits.maxFieldBytes ?? 1024,
        parts: limits.maxParts ?? 20,
        fieldNameSize: 100,
        headerPairs: 20,
      },
    });
  } catch (error) {
    throw badRequest(`Malformed multipart request: ${(error as Error).message}`);
  }
}

function bodySource(body: HttpRequest["body"]): Readable {
  if (body === null) return Readable.from([]);
  if (body instanceof Uint8Array) return Readable.from([body]);
  return Readable.from(body);
}

/**
 * Checks once a second, after `graceMs`, that the body's average rate since it began is at least
 * `minBytesPerSecond`; a slower body fails with `REQUEST_TIMEOUT`. Returns the timer to clear.
 */
function watchRate(
  limits: MultipartLimits,
  received: () => number,
  fail: (error: Error) => void,
): ReturnType<typeof setInterval> | undefined {
  const minRate = limits.minBytesPerSecond ?? 0;
  if (minRate <= 0) return undefined;
  const started = Date.now();
  const graceMs = limits.graceMs ?? 10_000;
  return setInterval(() => {
    const elapsed = Date.now() - started;
    const bytes = received();
    if (elapsed < graceMs || bytes >= (minRate * elapsed) / 1000) return;
    fail(
      new ImagePipelineError(
        ErrorCodes.REQUEST_TIMEOUT,
        `The upload arrived too slowly (${formatBytes(bytes)} in ${Math.round(elapsed / 1000)} s; at least ${formatBytes(minRate)} per second is required).`,
      ),
    );
  }, 1000);
}

/**
 * Collects the file part's bytes, failing with `IMAGE_TOO_LARGE` as soon as they pass
 * `maxFileBytes`. Resolves with the bytes, or `undefined` when busboy truncated the file.
 */
function collectFile(
  stream: Readable & { truncated?: boolean },
  maxFileBytes: number,
  fail: (error: Error) => void,
  tooLarge: () => Error,
): Promise<Uint8Array | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  return new Promise((done) => {
    stream.on("data", (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxFileBytes) {
        fail(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    stream.on("limit", () => fail(tooLarge()));
    stream.on("error", (error: Error) => fail(badRequest(`Malformed multipart request: ${error.message}`)));
    stream.on("end", () => done(stream.truncated ? undefined : new Uint8Array(Buffer.concat(chunks, total))));
  });
}

/**
 * Streams a `multipart/form-data` body through busboy with hard limits. At most one file (in
 * `fileField`); a file over `maxFileBytes` rejects with `IMAGE_TOO_LARGE` naming the field as soon
 * as the limit is crossed (busboy's silent truncation is turned into an error); malformed bodies
 * reject with `BAD_REQUEST`; the parser never throws asynchronously.
 */
export async function parseMultipartUpload(
  request: HttpRequest,
  limits: MultipartLimits,
): Promise<MultipartUpload> {
  const fileField = limits.fileField ?? "image";
  const parser = createParser(request, limits);
  const source = bodySource(request.body);

  return new Promise<MultipartUpload>((resolve, reject) => {
    const fields = new Map<string, string>();
    let file: Uint8Array | undefined;
    let settled = false;
    let pendingFile: Promise<void> = Promise.resolve();
    let received = 0;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      limits.abort?.removeEventListener("abort", aborted);
      source.unpipe(parser);
      source.resume();
      parser.removeAllListeners();
      parser.on("error", () => {});
      reject(error);
    };
    const watchdog = watchRate(limits, () => received, fail);
    const aborted = () => fail(limits.abort?.reason as Error);
    if (limits.abort?.aborted === true) aborted();
    limits.abort?.addEventListener("abort", aborted, { once: true });
    source.on("data", (chunk: Uint8Array) => {
      received += chunk.byteLength;
      limits.onBytes?.(chunk.byteLength);
    });
    const tooLarge = () =>
      validationError(
        [{ path: fileField, message: `must not be larger than ${formatBytes(limits.maxFileBytes)}` }],
        ErrorCodes.IMAGE_TOO_LARGE,
      );
    const notSingle = () => fail(validationError([{ path: fileField, message: "must be a single file" }]));

    parser.on("field", (name, value, info) => {
      if (info.valueTruncated) {
        fail(validationError([{ path: name, message: "must be between 1 and 30 characters long" }]));
        return;
      }
      if (!fields.has(name)) fields.set(name, value);
    });
    parser.on("file", (name, stream) => {
      if (name !== fileField || file !== undefined) {
        stream.resume();
        if (name === fileField) notSingle();
        return;
      }
      pendingFile = collectFile(stream, limits.maxFileBytes, fail, tooLarge).then((bytes) => {
        file = bytes;
      });
    });
    parser.on("filesLimit", notSingle);
    parser.on("fieldsLimit", () => fail(badRequest("Too many fields in the multipart request.")));
    parser.on("partsLimit", () => fail(badRequest("Too many parts in the multipart request.")));
    parser.on("error", (error: Error) => fail(badRequest(`Malformed multipart request: ${error.message}`)));
    parser.on("close", () => {
      void pendingFile.then(() => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        limits.abort?.removeEventListener("abort", aborted);
        resolve({ fields, file });
      });
    });
    source.on("error", (error: Error) =>
      fail(badRequest(`The request body could not be read: ${error.message}`)),
    );
    source.pipe(parser);
  });
}
