import { type OriginSource, sniffImageFormat } from "@pixport/core";
import { originNotImage, originTooLarge } from "@pixport/core/adapter-kit";

/** An in-memory origin: {@link createMemoryOriginSource}. */
export interface MemoryOriginSource extends OriginSource {
  /** Stores `data` at `path` (`/`-separated, unencoded segments), with a new ETag. */
  put(path: string, data: Uint8Array): void;
}

/**
 * An OriginSource over a map, for binding and library tests: objects by their joined segments,
 * each with an ETag that changes on every `put` (`not-modified` to a current one), the byte limit
 * and the image sniff kept as the port asks.
 */
export function createMemoryOriginSource(): MemoryOriginSource {
  const objects = new Map<string, { data: Uint8Array; etag: string }>();
  let version = 0;
  return {
    kind: "memory",
    put(path, data) {
      version += 1;
      objects.set(path, { data: data.slice(), etag: `"v${version}"` });
    },
    async get(request) {
      const object = objects.get(request.segments.join("/"));
      if (object === undefined) return { status: "not-found" };
      if (request.validators?.etag === object.etag) {
        return { status: "not-modified", validators: { etag: object.etag } };
      }
      if (object.data.byteLength > request.maxBytes) throw originTooLarge(request.maxBytes);
      if (sniffImageFormat(object.data) === null) throw originNotImage();
      return { status: "found", data: object.data.slice(), validators: { etag: object.etag } };
    },
  };
}
