/** Image formats pixport reads and writes. The list may grow; `jpg` is only an input alias. */
export const IMAGE_FORMATS = ["jpeg", "png", "webp"] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

/** MIME type per format, used for downloads, blob metadata and public copies. */
export const MIME_TYPES: Readonly<Record<ImageFormat, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
};

/** File extension per format (public URLs and blob keys). */
export const FILE_EXTENSIONS: Readonly<Record<ImageFormat, string>> = {
  jpeg: "jpg",
  png: "png",
  webp: "webp",
};

/** Whether the format can carry an alpha channel. */
export function formatHasAlpha(format: ImageFormat): boolean {
  return format !== "jpeg";
}

/**
 * Accepted image id shape: `image_` + 24 ASCII letters or digits (what clients of the original
 * service check). pixport generates only lowercase ids starting with a letter, but accepts any
 * case so foreign-looking ids give 404, not 422.
 */
export const IMAGE_ID_PATTERN = /^image_[a-zA-Z0-9]{24}$/;

/** Key stage: images created with a test key live in the test stage, live keys in the live stage. */
export type KeyKind = "test" | "live";

/**
 * The public Image resource: exactly the contract's eight fields, in the contract's key order.
 */
export interface Image {
  id: string;
  name: string;
  /** Public CDN URL, or `null` while the image is private. */
  url: string | null;
  width: number;
  height: number;
  format: ImageFormat;
  /** Size of the stored bytes. */
  size: number;
  /** ISO 8601, UTC, milliseconds. */
  created_at: string;
}

/**
 * What the repository stores for one image: the public fields plus ownership and the blob key.
 * `createdAt` is an ISO 8601 UTC string with milliseconds, so records compare and serialise
 * without conversions.
 */
export interface ImageRecord {
  id: string;
  accountId: string;
  stage: KeyKind;
  name: string;
  format: ImageFormat;
  width: number;
  height: number;
  size: number;
  createdAt: string;
  /** Key of the private bytes in the BlobStore. */
  blobKey: string;
  /** Public URL while published, else `null`. */
  url: string | null;
}

/** Projects a stored record to the wire resource, with the contract's key order. */
export function toImage(record: ImageRecord): Image {
  return {
    id: record.id,
    name: record.name,
    url: record.url,
    width: record.width,
    height: record.height,
    format: record.format,
    size: record.size,
    created_at: record.createdAt,
  };
}

/** Blob key of an image's private bytes. Keys are generated, never derived from user input. */
export function blobKeyFor(id: string, format: ImageFormat): string {
  return `images/${id}.${FILE_EXTENSIONS[format]}`;
}

/**
 * Detects jpeg, png or webp from the leading bytes (magic numbers). The declared content type and
 * file name are never trusted. Returns `null` for anything else (SVG, GIF, TIFF, HTML, ...).
 */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length >= 8 && png.every((byte, index) => bytes[index] === byte)) return "png";
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") return "webp";
  return null;
}

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}
