import type { BlobStore, Logger } from "@pixport/core";
import { ErrorCodes, IMAGE_FORMATS, ImagePipelineError } from "@pixport/core";
import { formatFromSpelling, publicKeyFor } from "@pixport/core/adapter-kit";
import { IMAGE_ID_PATTERN } from "@pixport/core/internal";
import { errorBody } from "@pixport/http";
import type { Express, Request, Response } from "express";
import { writeError } from "./lifecycle.js";

/** `GET` and `HEAD /images/{id}.{ext}`: published copies, served without a key by {@link servePublicImage}. */
export function mountPublicFiles(app: Express, store: BlobStore, log: Logger): void {
  app.get("/images/:file", servePublicImage(store, log));
  app.head("/images/:file", servePublicImage(store, log));
}

// Any stored format's extension or name (`.jpg` and `.jpeg`); which ones is the format table's say.
const PUBLIC_FILE = /^(image_[a-zA-Z0-9]{24})(?:\.([a-z]+))?$/;

/**
 * Serves published copies without a key: long-lived cache headers (bytes under a URL never change),
 * a strong ETag, the exact content type and `nosniff`. Unpublished or deleted images answer 404
 * with a short cache lifetime.
 */
export function servePublicImage(store: BlobStore, log: Logger) {
  return async (request: Request, response: Response) => {
    const match = PUBLIC_FILE.exec(String(request.params.file));
    response.setHeader("X-Content-Type-Options", "nosniff");
    const notFound = () => {
      response.status(404).setHeader("Cache-Control", "public, max-age=10");
      response.json(errorBody({ status: 404, message: "Image not found." }));
    };
    if (match === null || !IMAGE_ID_PATTERN.test(match[1] ?? "")) return notFound();
    const id = match[1] as string;
    const requested = match[2] === undefined ? undefined : formatFromSpelling(match[2]);
    if (requested === null) return notFound();
    try {
      const formats = requested === undefined ? IMAGE_FORMATS : [requested];
      for (const format of formats) {
        const key = publicKeyFor(id, format);
        const info = await store.stat(key);
        if (info === null) continue;
        const etag = `"${id}-${info.size}"`;
        response.setHeader("ETag", etag);
        response.setHeader("Cache-Control", info.cacheControl ?? "public, max-age=31536000, immutable");
        response.setHeader("Content-Type", info.contentType);
        if (request.headers["if-none-match"] === etag) {
          response.status(304).end();
          return;
        }
        const data = await store.get(key);
        if (data === null) continue;
        response.setHeader("Content-Length", String(data.byteLength));
        response.status(200).end(request.method === "HEAD" ? undefined : Buffer.from(data));
        return;
      }
      notFound();
    } catch (error) {
      log.error?.("serving a public image failed", { id, error: String(error) });
      // The store's own message (a path, ENOSPC) stays in the log.
      writeError(
        response,
        new ImagePipelineError(ErrorCodes.STORAGE_UNAVAILABLE, "The image could not be read.", {
          cause: error,
        }),
      );
    }
  };
}
