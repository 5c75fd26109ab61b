import type { BlobStore, ImageFormat, ImagePublisher } from "@pixport/core";
import { isImagePipelineError } from "@pixport/core";
import { describe, expect, it } from "vitest";

/** A publisher under test, with the stores it copies between. */
export interface ImagePublisherSubject {
  publisher: ImagePublisher;
  /** Where the private bytes are read from (the publisher's source). */
  source: BlobStore;
  /** Reads a public copy as a client of the public URL would: its bytes, or `null` when absent. */
  readPublic(id: string, format: ImageFormat): Promise<Uint8Array | null>;
  /** The base URL the publisher was given (URLs are `{base}/images/{id}.{ext}`). */
  publicBaseUrl: string;
}

/** Options of {@link describeImagePublisherConformance}. */
export interface ImagePublisherConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** A fresh publisher over fresh stores; called before every test. */
  create: () => Promise<ImagePublisherSubject>;
}

const extension: Record<ImageFormat, string> = {
  jpeg: "jpg",
  png: "png",
  webp: "webp",
  avif: "avif",
  gif: "gif",
  tiff: "tiff",
};
const id = (letter: string) => `image_${letter.repeat(24)}`;

/**
 * The behaviour every ImagePublisher must show (see the port's TSDoc): publish copies the private
 * bytes to the public location and returns `{base}/images/{id}.{ext}`, idempotently; `urlFor`, when
 * present, returns that same URL without publishing; unpublish removes the copy, idempotently;
 * publishing bytes that are missing fails without leaving a public copy.
 *
 * @example
 * ```ts
 * describeImagePublisherConformance({ name: "blob-store", create: async () => ({ ... }) });
 * ```
 */
export function describeImagePublisherConformance(options: ImagePublisherConformanceOptions): void {
  describe(`ImagePublisher conformance: ${options.name}`, () => {
    it("publishes a copy of the private bytes at {base}/images/{id}.{ext}, idempotently", async () => {
      const subject = await options.create();
      const bytes = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 9, 8, 7]);
      await subject.source.put("images/source.png", bytes, { contentType: "image/png" });
      const request = { id: id("a"), format: "png" as const, blobKey: "images/source.png" };
      const base = subject.publicBaseUrl.replace(/\/+$/, "");
      const url = await subject.publisher.publish(request);
      expect(url).toBe(`${base}/images/${request.id}.${extension.png}`);
      expect(subject.publisher.urlFor?.(request) ?? url).toBe(url);
      expect(await subject.publisher.publish(request)).toBe(url);
      expect(Array.from((await subject.readPublic(request.id, "png")) ?? [])).toEqual(Array.from(bytes));
      // The private bytes stay where they were.
      expect(Array.from((await subject.source.get("images/source.png")) ?? [])).toEqual(Array.from(bytes));
    });

    it("unpublishes idempotently, also an image that was never published", async () => {
      const subject = await options.create();
      await subject.source.put("images/b.webp", new Uint8Array([1, 2, 3]), { contentType: "image/webp" });
      const request = { id: id("b"), format: "webp" as const, blobKey: "images/b.webp" };
      await subject.publisher.publish(request);
      await subject.publisher.unpublish(request);
      expect(await subject.readPublic(request.id, "webp")).toBeNull();
      await subject.publisher.unpublish(request);
      await subject.publisher.unpublish({ id: id("c"), format: "jpeg" });
      expect(await subject.readPublic(id("c"), "jpeg")).toBeNull();
    });

    it("keeps images apart by id and format", async () => {
      const subject = await options.create();
      await subject.source.put("images/d.png", new Uint8Array([4]), { contentType: "image/png" });
      await subject.source.put("images/e.jpg", new Uint8Array([5]), { contentType: "image/jpeg" });
      await subject.publisher.publish({ id: id("d"), format: "png", blobKey: "images/d.png" });
      await subject.publisher.publish({ id: id("e"), format: "jpeg", blobKey: "images/e.jpg" });
      await subject.publisher.unpublish({ id: id("d"), format: "png" });
      expect(await subject.readPublic(id("d"), "png")).toBeNull();
      expect(Array.from((await subject.readPublic(id("e"), "jpeg")) ?? [])).toEqual([5]);
    });

    it("fails to publish missing private bytes and leaves no public copy", async () => {
      const subject = await options.create();
      const error = await subject.publisher
        .publish({ id: id("f"), format: "png", blobKey: "images/missing.png" })
        .catch((caught: unknown) => caught);
      expect(isImagePipelineError(error)).toBe(true);
      expect(await subject.readPublic(id("f"), "png")).toBeNull();
    });
  });
}
