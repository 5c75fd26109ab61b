import type { IncomingMessage } from "node:http";
import type { Readable, Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { ErrorCodes, type ImageFetchRequest, sniffImageFormat } from "@pixport/core";
import { acceptedFormats, formatBytes } from "@pixport/core/adapter-kit";
import { type Deadline, fail, translate } from "./fetch-errors.js";

/** The decoder of a content encoding: undefined for identity, null for one not supported. */
function decoderFor(encoding: string): Transform | undefined | null {
  if (encoding === "gzip" || encoding === "x-gzip") return createGunzip();
  if (encoding === "deflate") return createInflate();
  if (encoding === "br") return createBrotliDecompress();
  return encoding !== "identity" && encoding !== "" ? null : undefined;
}

/**
 * The decoder of a response's body (undefined for identity), or the refusal before any byte is
 * read: an encoding not supported, a declared length over the limit (checked first, never trusted).
 */
function bodyDecoder(response: IncomingMessage, maxBytes: number, tooLarge: Error): Transform | undefined {
  const encoding = String(response.headers["content-encoding"] ?? "identity")
    .trim()
    .toLowerCase();
  const decoder = decoderFor(encoding);
  if (decoder === null) {
    throw fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched (the source used an unsupported content encoding)",
    );
  }
  const declared = Number(response.headers["content-length"]);
  if (decoder === undefined && Number.isFinite(declared) && declared > maxBytes) throw tooLarge;
  return decoder;
}

export function readBody(
  response: IncomingMessage,
  request: ImageFetchRequest,
  deadline: Deadline,
): Promise<Uint8Array> {
  const tooLarge = fail(
    ErrorCodes.IMAGE_TOO_LARGE,
    `must point to a file no larger than ${formatBytes(request.maxBytes)}`,
  );
  const notImage = fail(ErrorCodes.INVALID_IMAGE, `must point to ${acceptedFormats("image")}`);
  let decoder: Transform | undefined;
  try {
    decoder = bodyDecoder(response, request.maxBytes, tooLarge);
  } catch (error) {
    response.destroy();
    return Promise.reject(error);
  }
  return collectBody(response, decoder, request.maxBytes, deadline, { tooLarge, notImage });
}

/** Reads the (decoded) body up to `maxBytes` under the deadline, sniffing its first bytes. */
function collectBody(
  response: IncomingMessage,
  decoder: Transform | undefined,
  maxBytes: number,
  deadline: Deadline,
  refusals: { tooLarge: Error; notImage: Error },
): Promise<Uint8Array> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let sniffed = false;
    let settled = false;
    const stop = (error: Error | null) => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener("abort", onAbort);
      if (error !== null) {
        decoder?.destroy();
        response.destroy();
        reject(error);
        return;
      }
      resolveBody(new Uint8Array(Buffer.concat(chunks, total)));
    };
    const onAbort = () => stop(deadline.error);
    deadline.signal.addEventListener("abort", onAbort, { once: true });
    const sniff = () => {
      sniffed = true;
      if (sniffImageFormat(Buffer.concat(chunks, total)) === null) stop(refusals.notImage);
    };
    const source: Readable = decoder ?? response;
    source.on("data", (chunk: Buffer) => {
      if (settled) return;
      total += chunk.byteLength;
      if (total > maxBytes) {
        stop(refusals.tooLarge);
        return;
      }
      chunks.push(chunk);
      if (!sniffed && total >= 12) sniff();
    });
    source.once("end", () => {
      if (!sniffed) sniff();
      stop(null);
    });
    source.once("error", (error) => stop(translate(error)));
    response.once("error", (error) => stop(translate(error)));
    response.once("aborted", () =>
      stop(
        fail(
          ErrorCodes.SOURCE_ERROR,
          "could not be fetched (the connection closed before the body was complete)",
        ),
      ),
    );
    if (decoder !== undefined) response.pipe(decoder);
  });
}
