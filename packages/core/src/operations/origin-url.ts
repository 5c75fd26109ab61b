import { z } from "zod";
import { ErrorCodes, ImagePipelineError, validationError } from "../errors.js";
import { workQueueOptionsSchema } from "../policies/work-gate.js";
import { AUTO_QUALITY_LEVELS, type AutoQualityLevel } from "./quality-levels.js";
import { EXTENSIONS, variantExtensions } from "./variant-url.js";

/*
 * Origin-image URLs: `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`. `{path}` is the
 * object's path under the origin, one or more segments each written with encodeURIComponent; the
 * signature covers `/o/{origin}/{modifiers}/{path}.{ext}` exactly as sent.
 */

/** An origin's name: the `{origin}` of its URLs. */
export const ORIGIN_NAME_PATTERN = /^[a-z0-9-]{1,32}$/;
export const originNameSchema = z
  .string()
  .regex(ORIGIN_NAME_PATTERN, "must be 1 to 32 lower-case letters, digits or hyphens");

/** An automatic quality an unsigned origin may allow: `auto` (the level `good`) or `auto:{level}`. */
export type UnsignedAutoQuality = "auto" | `auto:${AutoQualityLevel}`;
const UNSIGNED_AUTO_QUALITIES: [UnsignedAutoQuality, ...UnsignedAutoQuality[]] = [
  "auto",
  ...AUTO_QUALITY_LEVELS.map((level) => `auto:${level}` as const),
];

/** One entry of an unsigned allow-list's `qualities`: `q_{n}` for a number, `q_{entry}` else. */
const unsignedQualitySchema = z.union([z.number().int().min(1).max(100), z.enum(UNSIGNED_AUTO_QUALITIES)], {
  error: `must be an integer between 1 and 100, auto or auto:{level} (a level of ${AUTO_QUALITY_LEVELS.join(", ")})`,
});

/** Delivery settings of one origin (`delivery.origins.{name}`); where its bytes live is its source. */
export const originSettingsSchema = z.strictObject({
  /**
   * The account the origin belongs to: its computed variants (cache misses) count in that
   * account's monthly variant counter, with the account's allowance. Uncounted when absent.
   */
  account: z.string().min(1).max(100).optional(),
  /**
   * Accept URLs without a signature (`_`) whose modifiers are only a width of `widths`, optionally
   * a quality of `qualities`, and a format of `formats`, so a loader in the browser needs no
   * secret. Anything else unsigned is 403. Signed URLs keep every modifier. A quality is a number
   * (`q_{n}`) or automatic: `"auto"` allows `q_auto` and `q_auto:good` (one variant), and
   * `"auto:{level}"` allows `q_auto:{level}`.
   */
  unsigned: z
    .strictObject({
      widths: z.array(z.number().int().min(1).max(10_000)).min(1).max(200),
      qualities: z.array(unsignedQualitySchema).max(100).default([]),
      formats: z.array(z.enum(variantExtensions())).min(1).default(["auto"]),
    })
    .optional(),
  /**
   * How long a fetched original is used before it is revalidated (`ETag`/`Last-Modified`) when
   * its origin sends no `Cache-Control: max-age`; the origin's max-age wins when it sends one.
   * @default 3600
   */
  ttlSeconds: z.number().int().min(0).max(31_536_000).default(3600),
  /**
   * Deadline of one fetch of an original (connection, headers and body), ms; past it the answer
   * is 504 `ORIGIN_TIMEOUT`. @default 15000
   */
  timeoutMs: z.number().int().min(100).max(300_000).default(15_000),
  /**
   * Fetches from this origin at once, waiting and how long (its share of the node): a slow origin
   * holds at most `maxActive` fetches; beyond `maxQueued` waiting, misses answer 503 `OVERLOADED`.
   * @default { maxActive: 8, maxQueued: 64, maxWaitMs: 15000 }
   */
  fetches: workQueueOptionsSchema.default({ maxActive: 8, maxQueued: 64, maxWaitMs: 15_000 }),
});
export type OriginSettings = z.input<typeof originSettingsSchema>;
export type ResolvedOriginSettings = z.output<typeof originSettingsSchema>;

/** `{path}.{ext}` of an origin URL, checked and decoded. */
export interface OriginPath {
  /** The path as sent (percent-encoded segments), which the signature covers. */
  raw: string;
  /** Decoded segments. */
  segments: string[];
  ext: string;
}

/** Whether `text` holds a control character (C0 or DEL). */
const hasControl = (text: string) =>
  [...text].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);

/**
 * Splits and checks `{path}.{ext}`: every segment decodes, is not empty, `.` or `..`, and holds no
 * `/`, `\` or control character once decoded (so no path can climb out of its origin's root, even
 * encoded); each is written as encodeURIComponent writes it and the extension in lower case (one
 * spelling per variant, 404 naming it else).
 */
export function parseOriginPath(raw: string): OriginPath {
  const dot = raw.lastIndexOf(".");
  const slash = raw.lastIndexOf("/");
  const written = dot > slash ? raw.slice(dot + 1) : "";
  const ext = written.toLowerCase();
  if (!EXTENSIONS.includes(ext)) {
    throw validationError([{ path: "path", message: `must end with .${EXTENSIONS.join(", .")}` }]);
  }
  const encoded = raw.slice(0, dot).split("/");
  const segments: string[] = [];
  for (const segment of encoded) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      decoded = "";
    }
    if (
      decoded === "" ||
      decoded === "." ||
      decoded === ".." ||
      /[/\\]/.test(decoded) ||
      hasControl(decoded)
    ) {
      throw validationError([
        {
          path: "path",
          message:
            "must be segments separated by /, none empty, . or .., without (even encoded) slashes, backslashes or control characters",
        },
      ]);
    }
    if (encodeURIComponent(decoded) !== segment) {
      throw new ImagePipelineError(
        ErrorCodes.ROUTE_NOT_FOUND,
        `Origin URLs have one spelling per path: ${encodeURIComponent(decoded)} (as encodeURIComponent writes it), not ${segment}.`,
      );
    }
    segments.push(decoded);
  }
  if (written !== ext) {
    throw new ImagePipelineError(
      ErrorCodes.ROUTE_NOT_FOUND,
      `Variant URLs have one spelling: ${raw.slice(0, dot)}.${ext} (lower-case extension), not ${raw}.`,
    );
  }
  return { raw: raw.slice(0, dot), segments, ext };
}
