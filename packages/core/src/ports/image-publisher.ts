import type { ImageFormat } from "../image.js";

/** What to publish: the image id, its format and where its private bytes live. */
export interface PublishRequest {
  id: string;
  format: ImageFormat;
  /** Key of the private bytes in the deployment's BlobStore. */
  blobKey: string;
}

/**
 * Makes images reachable without a key at a public (CDN) URL.
 *
 * - `publish` copies the bytes to the public location and returns the absolute public URL
 *   (`{publicBaseUrl}/images/{id}.{ext}`). Publishing again returns the same URL (idempotent).
 * - `unpublish` removes the public copy; idempotent. After it resolves the URL answers 404
 *   (modulo the user's CDN cache, which a purge hook can clear).
 */
export interface ImagePublisher {
  /**
   * The URL `publish` returns for this image, without publishing. Optional; when present the core
   * records the URL before copying, so a crash between the two can leave a published record
   * without its copy (repaired by publishing again), never a public copy of a private image.
   */
  urlFor?(request: Omit<PublishRequest, "blobKey">): string;
  publish(request: PublishRequest): Promise<string>;
  unpublish(request: Omit<PublishRequest, "blobKey">): Promise<void>;
}
