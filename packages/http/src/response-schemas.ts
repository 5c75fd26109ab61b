import { IMAGE_FORMATS } from "@pixport/core";
import { formatList } from "@pixport/core/adapter-kit";
import { IMAGE_ID_PATTERN, uploadImageSchema } from "@pixport/core/internal";
import { z } from "zod";

/*
 * Wire shapes that only HTTP knows: the responses and the multipart upload form. They are route
 * data for the OpenAPI document (`openapi.ts`); the handler does not validate its own output.
 */

const IMAGE_ID_EXAMPLE = "image_etm0g3x5iap4cld1qcfsjvo2";

/** The Image resource (contract section 1.4): always all eight keys, in this order. */
export const imageSchema = z
  .object({
    id: z
      .string()
      .regex(IMAGE_ID_PATTERN)
      .meta({ description: "`image_` followed by 24 letters or digits.", examples: [IMAGE_ID_EXAMPLE] }),
    name: z
      .string()
      .min(1)
      .max(30)
      .meta({ description: "Not unique; derived images keep their source's name." }),
    url: z
      .url()
      .nullable()
      .meta({ description: "Public URL while the image is published, otherwise `null`." }),
    width: z.int().positive().meta({ description: "Pixels." }),
    height: z.int().positive().meta({ description: "Pixels." }),
    format: z.enum(IMAGE_FORMATS),
    size: z.int().nonnegative().meta({ description: "Bytes of the stored image." }),
    created_at: z.iso.datetime({ precision: 3 }).meta({
      // The format says it; zod's long generated pattern would only add noise to the document.
      pattern: undefined,
      description: "ISO 8601 in UTC with milliseconds.",
      examples: ["2024-08-07T12:40:55.712Z"],
    }),
  })
  .meta({ description: "An image. Every create, transform, publish, unpublish and get call returns one." });

/** `GET /v1/images/{image_id}/metadata` (pixport's own route, not in the contract). */
export const imageMetadataSchema = z
  .object({
    id: z
      .string()
      .regex(IMAGE_ID_PATTERN)
      .meta({ examples: [IMAGE_ID_EXAMPLE] }),
    width: z.int().positive().meta({ description: "Pixels (of one frame)." }),
    height: z.int().positive().meta({ description: "Pixels (of one frame)." }),
    format: z.enum(IMAGE_FORMATS),
    size: z.int().nonnegative().meta({ description: "Bytes of the stored image." }),
    has_alpha: z.boolean().meta({ description: "Some pixel is not fully opaque." }),
    frames: z.int().positive().meta({ description: "Frames of an animation; 1 for a still image." }),
    dominant_color: z
      .string()
      .regex(/^#[0-9a-f]{6}$/)
      .nullable()
      .meta({
        description: "The most common colour (alpha-weighted, 4-bit buckets, the bucket's mean).",
        examples: ["#3a6ea5"],
      }),
    thumbhash: z
      .string()
      .nullable()
      .meta({
        description:
          "Base64 ThumbHash of the (first frame of the) image: decode it with the `thumbhash` package's `thumbHashToDataURL` for a placeholder.",
        examples: ["1QcSHQRnh493V4dIh4eXh1h4kJUI"],
      }),
    blurhash: z
      .string()
      .nullable()
      .meta({ description: "BlurHash with 4 x 3 components.", examples: ["LEHV6nWB2yk8pyo0adR*.7kCMdnj"] }),
  })
  .meta({
    description:
      "Facts about an image, computed once when it is created (images made before this route existed: on first request) and stored, so the answer decodes nothing. Not billed.",
  });

/** `POST /v1/images/{image_id}/signed-url`. */
export const signedUrlResponseSchema = z.object({
  url: z.url().meta({ description: "The variant URL; it carries its expiry in an `exp_` token." }),
  expires_at: z.iso.datetime().meta({ description: "When the URL stops working (ISO 8601, UTC)." }),
});

/** Path of a variant URL. */
export const variantPathSchema = z.object({
  signature: z.string().meta({
    description:
      "base64url HMAC-SHA256 of `/{image_id}/{canonical modifiers}.{ext}` with a server signing key (`@pixport/url-signer`), or `_` for an unsigned preset URL.",
  }),
  image_id: z.string().regex(IMAGE_ID_PATTERN),
  variant: z.string().meta({ examples: ["w_640,fit_cover,h_480.auto", "p_thumb.webp"] }),
});

/** Path parameters of `GET /v/{signature}/o/{origin}/{modifiers}/{path}`. */
export const originVariantPathSchema = z.object({
  signature: z.string().meta({
    description:
      "base64url HMAC-SHA256 of `/o/{origin}/{modifiers}/{path}` (the path as sent, encoded) with a server signing key (`@pixport/url-signer`'s `originVariantUrl`), or `_` for an origin configured `unsigned` (within its allow-list).",
  }),
  origin: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/)
    .meta({ description: "The origin's configured name." }),
  modifiers: z.string().meta({ examples: ["w_640", "fit_cover,h_480,w_640", "_"] }),
  path: z.string().meta({
    description:
      "The object's path under the origin, `/`-separated segments each encoded with encodeURIComponent (no `.`, `..`, empty or encoded-slash segments), then `.{ext}`: jpeg, jpg, png, webp, avif, gif or auto.",
    examples: ["products/shoe.jpg.auto", "banners/summer%20sale.png.webp"],
  }),
});

/** `GET /v1/images`: one page, newest first, with absolute links to the neighbouring pages. */
export const imageListSchema = z.object({
  data: z.array(imageSchema),
  links: z.object({
    previous: z
      .url()
      .nullable()
      .meta({ description: "Absolute URL of the previous page, `null` on the first page." }),
    next: z.url().nullable().meta({ description: "Absolute URL of the next page, `null` on the last page." }),
  }),
});

const errorBase = {
  type: z
    .url()
    .meta({ examples: ["https://docs.img-processing.com/errors/not-found"], description: "Error kind." }),
  error: z.string().meta({ description: "Title of the error kind, e.g. `Not Found`." }),
  code: z
    .string()
    .optional()
    .meta({ description: "pixport's machine-readable error code, e.g. `IMAGE_NOT_FOUND`." }),
};

/** Every error other than 422 (contract section 2.1, message shape). */
export const messageErrorSchema = z
  .object({
    ...errorBase,
    status: z.int().min(400).max(599).meta({ description: "Equals the HTTP status." }),
    message: z.string(),
  })
  .meta({ description: "An error with a human-readable message." });

/** 422 (contract section 2.1, validation shape): every failing field as `<field> <problem>`, no `message`. */
export const validationErrorSchema = z
  .object({
    ...errorBase,
    status: z.literal(422),
    errors: z
      .array(z.string())
      .min(1)
      .meta({ examples: [["width must be an integer between 1 and 10000"]] }),
  })
  .meta({ description: "A validation error listing every failing field." });

/** The multipart form of the upload routes (parts `name` and `image`). */
export const uploadImageFormSchema = uploadImageSchema.extend({
  image: z.string().meta({
    contentMediaType: "application/octet-stream",
    description: `A ${formatList(IMAGE_FORMATS)} file (detected from the bytes), at most 20 MB by default.`,
  }),
});

/** The OpenAPI document itself (`GET /v1/openapi.json`). */
export const openApiDocumentSchema = z.looseObject({ openapi: z.string(), info: z.looseObject({}) });

/** Answer of `visualize`. */
export const visualizeResponseSchema = z.object({ response: z.string() });

const scoredLabelSchema = z.object({ label: z.string(), score: z.number().min(0).max(1) });

/** Answer of `classify` (test keys: every label `result masked`, every score 0). */
export const classificationSchema = z.object({
  main_label: z.string(),
  main_score: z.number().min(0).max(1),
  secondary_labels: z.array(scoredLabelSchema).length(4),
});

/** Answer of `extract-formatted-text`. */
export const extractedTextSchema = z.object({ format: z.enum(["markdown", "plain"]), content: z.string() });
