import type { IncomingMessage } from "node:http";
import { sniffImageFormat } from "@pixport/core";
import { originError, originNotImage, originTooLarge } from "@pixport/core/adapter-kit";

/** The body up to `maxBytes` (the declared length is checked first, never trusted), sniffed early. */
export function readOriginBody(response: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    return Promise.reject(originTooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const stop = (error: Error | null) => {
      if (settled) return;
      settled = true;
      if (error !== null) {
        response.destroy();
        reject(error);
        return;
      }
      resolve(new Uint8Array(Buffer.concat(chunks, total)));
    };
    const sniff = () => sniffImageFormat(Buffer.concat(chunks, total)) !== null;
    response.on("data", (chunk: Buffer) => {
      if (settled) return;
      const before = total;
      total += chunk.byteLength;
      if (total > maxBytes) return stop(originTooLarge(maxBytes));
      chunks.push(chunk);
      if (before < 12 && total >= 12 && !sniff()) stop(originNotImage());
    });
    response.once("end", () => (total < 12 && !sniff() ? stop(originNotImage()) : stop(null)));
    response.once("error", (error) => stop(error));
    response.once("aborted", () =>
      stop(originError("The origin closed the connection before the body was complete.")),
    );
  });
}
