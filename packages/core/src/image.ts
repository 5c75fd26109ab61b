/** What pixport knows about one image format: one row of {@link FORMAT_TABLE}. */
export interface FormatInfo {
  /** Media type of its bytes: downloads, blob metadata, public copies, variant responses. */
  readonly mediaType: string;
  /** File extension of its blob keys and public URLs (`images/{id}.{extension}`). */
  readonly extension: string;
  /** It can carry transparency. GIF can, with one fully transparent palette entry. */
  readonly alpha: boolean;
  /** It can carry an animation; a codec keeps one when it lists the format in `capabilities.animation`. */
  readonly animation: boolean;
  /** Browsers show it, so a variant URL may ask for it. */
  readonly browser: boolean;
  /** One of the original contract's three formats, which every codec is expected to write. */
  readonly contract: boolean;
}

/**
 * The format table: every image format pixport reads and writes, in a fixed order (the contract's
 * three first). Every other list of formats, media types and extensions derives from it, so a
 * format that can be stored can also be published, served at its public URL, imported from that
 * URL and named in requests. HEIF images coded with AV1 are read as `avif` (an AVIF file is exactly
 * that); HEIF coded with HEVC (most iPhone HEIC files) is refused, see
 * {@link describeUnsupportedImage}.
 */
export const FORMAT_TABLE = {
  jpeg: {
    mediaType: "image/jpeg",
    extension: "jpg",
    alpha: false,
    animation: false,
    browser: true,
    contract: true,
  },
  png: {
    mediaType: "image/png",
    extension: "png",
    alpha: true,
    animation: false,
    browser: true,
    contract: true,
  },
  webp: {
    mediaType: "image/webp",
    extension: "webp",
    alpha: true,
    animation: true,
    browser: true,
    contract: true,
  },
  avif: {
    mediaType: "image/avif",
    extension: "avif",
    alpha: true,
    animation: false,
    browser: true,
    contract: false,
  },
  gif: {
    mediaType: "image/gif",
    extension: "gif",
    alpha: true,
    animation: true,
    browser: true,
    contract: false,
  },
  tiff: {
    mediaType: "image/tiff",
    extension: "tiff",
    alpha: true,
    animation: false,
    browser: false,
    contract: false,
  },
} as const satisfies Record<string, FormatInfo>;

/** A format pixport reads and writes. */
export type ImageFormat = keyof typeof FORMAT_TABLE;

/** Every format of {@link FORMAT_TABLE}, in its order (never empty, so it can feed `z.enum`). */
export const IMAGE_FORMATS = Object.keys(FORMAT_TABLE) as unknown as readonly [ImageFormat, ...ImageFormat[]];

type Flag = "animation" | "browser" | "contract";
/** The formats whose row has `flag` set. */
type FormatsWhere<F extends Flag> = {
  [Format in ImageFormat]: (typeof FORMAT_TABLE)[Format][F] extends true ? Format : never;
}[ImageFormat];

const formatsWhere = <F extends Flag>(flag: F): readonly FormatsWhere<F>[] =>
  IMAGE_FORMATS.filter((format): format is FormatsWhere<F> => FORMAT_TABLE[format][flag]);

/** Formats that carry an animation; a codec keeps it when it lists the format in `capabilities.animation`. */
export const ANIMATED_FORMATS: readonly ImageFormat[] = formatsWhere("animation");

/** Formats browsers show: what a variant URL may ask for. */
export const BROWSER_FORMATS = formatsWhere("browser");

/** The original contract's formats (`jpeg`, `png`, `webp`): every codec is expected to write them. */
export const CONTRACT_FORMATS = formatsWhere("contract");

/** MIME type per format, used for downloads, blob metadata and public copies. */
export const MIME_TYPES: Readonly<Record<ImageFormat, string>> = Object.fromEntries(
  IMAGE_FORMATS.map((format) => [format, FORMAT_TABLE[format].mediaType]),
) as Record<ImageFormat, string>;

/** File extension per format (public URLs and blob keys). */
export const FILE_EXTENSIONS: Readonly<Record<ImageFormat, string>> = Object.fromEntries(
  IMAGE_FORMATS.map((format) => [format, FORMAT_TABLE[format].extension]),
) as Record<ImageFormat, string>;

/** A name or file extension of one of `Format` (`jpeg`, `jpg`, `png`, ...). */
export type FormatSpelling<Format extends ImageFormat = ImageFormat> =
  | Format
  | (typeof FORMAT_TABLE)[Format]["extension"];

/**
 * Every spelling of `formats` a request or URL may use, in table order: each format's name, then
 * the extensions that differ from their names (`jpeg, png, ..., jpg`). One format's spellings are
 * its name and then its extension.
 */
export function formatSpellings<Format extends ImageFormat>(
  formats: readonly Format[],
): [FormatSpelling<Format>, ...FormatSpelling<Format>[]] {
  const aliases = formats
    .filter((format) => FORMAT_TABLE[format].extension !== format)
    .map((format) => FORMAT_TABLE[format].extension);
  return [...formats, ...aliases] as [FormatSpelling<Format>, ...FormatSpelling<Format>[]];
}

/**
 * The format a name or file extension spells (`jpg` and `jpeg` are both `jpeg`), or `null`.
 * Case-sensitive: URLs and request fields use lowercase.
 */
export function formatFromSpelling(spelling: string): ImageFormat | null {
  for (const format of IMAGE_FORMATS) {
    if (spelling === format || spelling === FILE_EXTENSIONS[format]) return format;
  }
  return null;
}

/** Whether the format can carry transparency (every format but JPEG; GIF through its palette). */
export function formatHasAlpha(format: ImageFormat): boolean {
  return FORMAT_TABLE[format].alpha;
}

/** Human list of `formats` for messages and docs: `jpeg, png, webp, avif, gif or tiff`. */
export function formatList(formats: readonly ImageFormat[]): string {
  return formats.length < 2 ? formats.join("") : `${formats.slice(0, -1).join(", ")} or ${formats.at(-1)}`;
}

/** Human list of the accepted formats for messages: `jpeg, png, webp, avif, gif or tiff`. */
export const FORMAT_LIST = formatList(IMAGE_FORMATS);

/**
 * The accepted formats in a 422 message, starting with the contract's own words (`a jpeg, png or
 * webp file`) so clients that match them keep working, then the formats pixport adds.
 */
export function acceptedFormats(noun: "file" | "image"): string {
  const added = IMAGE_FORMATS.filter((format) => !FORMAT_TABLE[format].contract);
  return `a ${formatList(CONTRACT_FORMATS)} ${noun} (or ${formatList(added)})`;
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
  /** Frames of an animation (1, or absent, for a still image). */
  frames?: number;
  /**
   * Facts computed once from the stored bytes (`GET /v1/images/{id}/metadata`); absent on records
   * made before they existed, which get them on first request.
   */
  facts?: ImageFacts;
}

/** What `GET /v1/images/{id}/metadata` adds to the record, computed when the image is created. */
export interface ImageFacts {
  /** Some pixel is not fully opaque. */
  hasAlpha: boolean;
  /** Frames of an animation, 1 for a still image. */
  frames: number;
  /** The most common colour (alpha-weighted, 4-bit buckets, the bucket's mean), `#rrggbb`. */
  dominantColor: string;
  /** Base64 ThumbHash of the first frame, or `null` when the pipeline has no placeholder encoder. */
  thumbhash: string | null;
  /** BlurHash (4x3 components) of the first frame, or `null` likewise. */
  blurhash: string | null;
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
 * Detects the format from the leading bytes (magic numbers): jpeg, png, webp, gif (87a/89a), tiff
 * (both byte orders; BigTIFF is refused) and avif (an ISO-BMFF `ftyp` of the HEIF family whose
 * image items are coded with AV1). The declared content type and file name are never trusted.
 * Returns `null` for anything else (SVG, HEIC coded with HEVC, HTML, ...).
 */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length >= 8 && png.every((byte, index) => bytes[index] === byte)) return "png";
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") return "webp";
  if (bytes.length >= 6 && (ascii(bytes, 0, 6) === "GIF87a" || ascii(bytes, 0, 6) === "GIF89a")) return "gif";
  if (
    bytes.length >= 8 &&
    ((bytes[0] === 0x49 && bytes[1] === 0x49 && bytes[2] === 0x2a && bytes[3] === 0x00) ||
      (bytes[0] === 0x4d && bytes[1] === 0x4d && bytes[2] === 0x00 && bytes[3] === 0x2a))
  ) {
    return "tiff";
  }
  if (heifCoding(bytes) === "av1") return "avif";
  return null;
}

/** `ftyp` brands of the HEIF family (ISO/IEC 23008-12) and AVIF. */
const HEIF_BRANDS = new Set([
  "avif",
  "avis",
  "heic",
  "heix",
  "heim",
  "heis",
  "hevc",
  "hevx",
  "mif1",
  "msf1",
  "mif2",
]);
/** How far into a HEIF file the coding configuration box is looked for (it sits in `meta`, first). */
const HEIF_SCAN_BYTES = 64 * 1024;

/**
 * The coding of a HEIF-family file: `av1` (an `av1C` configuration box, or an `avif`/`avis` brand),
 * `hevc` (an `hvcC` box), `other`, or `null` when the bytes are not an ISO-BMFF file of the HEIF
 * family.
 */
function heifCoding(bytes: Uint8Array): "av1" | "hevc" | "other" | null {
  if (bytes.length < 16 || ascii(bytes, 4, 8) !== "ftyp") return null;
  const size = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  if (size < 16 || size > 4096 || size > bytes.length) return null;
  const brands = [ascii(bytes, 8, 12)];
  for (let offset = 16; offset + 4 <= size; offset += 4) brands.push(ascii(bytes, offset, offset + 4));
  if (!brands.some((brand) => HEIF_BRANDS.has(brand))) return null;
  const end = Math.min(bytes.length, HEIF_SCAN_BYTES);
  if (findAscii(bytes, "av1C", size, end)) return "av1";
  if (findAscii(bytes, "hvcC", size, end)) return "hevc";
  return brands.includes("avif") || brands.includes("avis") ? "av1" : "other";
}

/**
 * Why well-known image bytes pixport cannot read are refused, for the 422 message; `null` when the
 * bytes are not one of those (the generic message applies). Today: HEIC coded with HEVC.
 */
export function describeUnsupportedImage(bytes: Uint8Array): string | null {
  const coding = heifCoding(bytes);
  if (coding === "hevc") {
    return "is a HEIC image coded with HEVC, which pixport cannot decode; convert it to JPEG or AVIF first (on an iPhone: Settings > Camera > Formats > Most Compatible)";
  }
  if (coding === "other")
    return "is a HEIF image in a coding pixport cannot decode; convert it to JPEG or AVIF first";
  return null;
}

function findAscii(bytes: Uint8Array, text: string, start: number, end: number): boolean {
  const first = text.charCodeAt(0);
  for (let index = start; index + text.length <= end; index += 1) {
    if (bytes[index] !== first) continue;
    let match = true;
    for (let offset = 1; offset < text.length && match; offset += 1) {
      match = bytes[index + offset] === text.charCodeAt(offset);
    }
    if (match) return true;
  }
  return false;
}

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}
