import path from "node:path";
import { type BlobMetadata, ErrorCodes, ImagePipelineError } from "@pixport/core";
import { formatFromSpelling, MIME_TYPES } from "@pixport/core/adapter-kit";
import { z } from "zod";
import type { FsPromises } from "./atomic-write.js";
import { isMissing } from "./fs-errors.js";

/** Sidecar file that holds the metadata of blob file `name`; `~` keeps it out of the key space. */
export function metadataFileName(name: string): string {
  return `.${name}~meta.json`;
}

const storedMetadataSchema = z.object({ contentType: z.string(), cacheControl: z.string().optional() });

/** Sent when a blob file exists without its sidecar (placed by hand): bytes of unknown type. */
const UNKNOWN_CONTENT_TYPE = "application/octet-stream";

/** The content type of a blob without a sidecar: from its file extension (any spelling of an image format, or `.json`). */
export function derivedContentType(name: string): string {
  const dot = name.lastIndexOf(".");
  if (dot === -1) return UNKNOWN_CONTENT_TYPE;
  const extension = name.slice(dot + 1);
  if (extension === "json") return "application/json";
  const format = formatFromSpelling(extension);
  return format === null ? UNKNOWN_CONTENT_TYPE : MIME_TYPES[format];
}

export async function readMetadata(
  fs: FsPromises,
  directory: string,
  name: string,
  key: string,
): Promise<BlobMetadata> {
  let text: string;
  try {
    text = await fs.readFile(path.join(directory, metadataFileName(name)), "utf8");
  } catch (error) {
    if (isMissing(error)) return { contentType: derivedContentType(name) };
    throw error;
  }
  let stored: z.infer<typeof storedMetadataSchema>;
  try {
    stored = storedMetadataSchema.parse(JSON.parse(text));
  } catch (error) {
    throw new ImagePipelineError(ErrorCodes.INTERNAL, `The metadata file of blob ${key} is corrupt.`, {
      cause: error,
    });
  }
  return stored.cacheControl === undefined
    ? { contentType: stored.contentType }
    : { contentType: stored.contentType, cacheControl: stored.cacheControl };
}

/**
 * The sidecar text for a put of `key` with `metadata`, or null when the metadata follows from the
 * file name (a sidecar is written only when it does not).
 */
export function sidecarFor(key: string, metadata: BlobMetadata): string | null {
  const derivable =
    metadata.cacheControl === undefined &&
    metadata.contentType === derivedContentType(key.slice(key.lastIndexOf("/") + 1));
  return derivable
    ? null
    : JSON.stringify(
        metadata.cacheControl === undefined
          ? { contentType: metadata.contentType }
          : { contentType: metadata.contentType, cacheControl: metadata.cacheControl },
      );
}
