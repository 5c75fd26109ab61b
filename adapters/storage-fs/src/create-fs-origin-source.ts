import { constants } from "node:fs";
import { open, realpath } from "node:fs/promises";
import path from "node:path";
import { type OriginSource, sniffImageFormat } from "@pixport/core";
import { originError, originNotImage, originTooLarge, parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { isInside, resolveInside } from "./containment.js";
import { errorCode, isMissing } from "./fs-errors.js";

/** Options of {@link createFsOriginSource}. */
export const fsOriginSourceOptionsSchema = z.strictObject({
  /** The directory whose files are the origin's images (absolute, or relative to the working directory). */
  directory: z.string().min(1),
});
export type FsOriginSourceOptions = z.input<typeof fsOriginSourceOptionsSchema>;

const notFound = { status: "not-found" } as const;

/**
 * An origin source on a directory: `{path}` names a file under it. No path leaves the directory:
 * the core refuses `..`, `.`, empty and slash-bearing segments, the path is resolved inside the
 * root lexically, and then through `realpath`, so a symbolic link whose target is outside the
 * directory answers not-found (links inside it are followed). The file is opened without
 * following a final link (`O_NOFOLLOW`) at its resolved path, read up to `maxBytes`, and its
 * first bytes must be an image's.
 *
 * Validators: a weak ETag of size and modification time, and `Last-Modified`; a revalidation that
 * finds both unchanged answers not-modified without reading the file.
 *
 * @example
 * ```ts
 * const origins = { assets: createFsOriginSource({ directory: "/srv/assets" }) };
 * ```
 */
export function createFsOriginSource(options: FsOriginSourceOptions): OriginSource {
  const { directory } = parseOptions(fsOriginSourceOptionsSchema, options, "createFsOriginSource");
  let root: Promise<string> | undefined;
  const rootPath = () => {
    root ??= realpath(path.resolve(directory)).catch((error: unknown) => {
      root = undefined;
      throw originError("The origin's directory is not readable.", error);
    });
    return root;
  };
  return {
    kind: "fs",
    async get(request) {
      const base = await rootPath();
      const lexical = resolveInside(base, request.segments.join(path.sep));
      let resolved: string;
      try {
        resolved = await realpath(lexical);
      } catch (error) {
        if (isMissing(error) || errorCode(error) === "ELOOP") return notFound;
        throw failure(error);
      }
      if (resolved === base || !isInside(base, resolved)) return notFound;
      let handle: Awaited<ReturnType<typeof open>>;
      try {
        handle = await open(resolved, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (error) {
        if (isMissing(error) || errorCode(error) === "ELOOP" || errorCode(error) === "EISDIR")
          return notFound;
        throw failure(error);
      }
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) return notFound;
        const validators = {
          etag: `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`,
          lastModified: stats.mtime.toUTCString(),
        };
        if (request.validators?.etag === validators.etag) return { status: "not-modified", validators };
        if (stats.size > request.maxBytes) {
          throw originTooLarge(request.maxBytes);
        }
        // Read what is there, at most one byte more than allowed (a file growing meanwhile).
        const data = new Uint8Array(Math.min(stats.size, request.maxBytes) + 1);
        let length = 0;
        while (length < data.byteLength) {
          const { bytesRead } = await handle.read(data, length, data.byteLength - length, length);
          if (bytesRead === 0) break;
          length += bytesRead;
        }
        if (length > request.maxBytes) throw originTooLarge(request.maxBytes);
        const bytes = data.subarray(0, length);
        if (sniffImageFormat(bytes) === null) {
          throw originNotImage();
        }
        return { status: "found", data: bytes, validators };
      } finally {
        await handle.close();
      }
    },
  };
}

const failure = (error: unknown) => originError("The origin's file could not be read.", error);
