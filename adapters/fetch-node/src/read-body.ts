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

export function readBody(
  response: IncomingMessage,
  request: ImageFetchRequest,
  deadline: Deadline,
): Promise<Uint8Array> {
  return new Promise((resolveBody, reject) => {
    const tooLarge = fail(
      ErrorCodes.IMAGE_TOO_LARGE,
      `must point to a file no larger than ${formatBytes(request.maxBytes)}`,
    );
    const notImage = fail(ErrorCodes.INVALID_IMAGE, `must point to ${acceptedFormats("image")}`);
    const encoding = String(response.headers["content-encoding"] ?? "identity")
      .trim()
      .toLowerCase();
    const decoder = decoderFor(encoding);
    if (decoder === null) {
      response.destroy();
      reject(
        fail(
          ErrorCodes.SOURCE_ERROR,
          "could not be fetched (the source used an unsupported content encoding)",
        ),
      );
      return;
    }
    const declared = Number(response.headers["content-length"]);
    if (decoder === undefined && Number.isFinite(declared) && declared > request.maxBytes) {
      response.destroy();
      reject(tooLarge);
      return;
    }
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
      if (sniffImageFormat(Buffer.concat(chunks, total)) === null) stop(notImage);
    };
    const source: Readable = decoder ?? response;
    source.on("data", (chunk: Buffer) => {
      if (settled) return;
      total += chunk.byteLength;
      if (total > request.maxBytes) {
        stop(tooLarge);
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
