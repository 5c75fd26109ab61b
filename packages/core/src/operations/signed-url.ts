import { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "../errors.js";
import type { ImageRecord } from "../image.js";
import type { VariantSigner } from "../ports/variant-cache.js";
import { parseAll } from "../schemas.js";
import { type Caller, loadOwnedImage, type PipelineContext } from "./context.js";
import { type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";
import type { ResolvedDeliveryOptions } from "./variant-options.js";
import { planVariant } from "./variant-plan.js";
import type { ResolvedVariantUrl } from "./variant-request.js";
import { canonicalModifiers, expandPreset, parseTokens, tokenKey, variantExtensions } from "./variant-url.js";

/** Body of `POST /v1/images/{image_id}/signed-url`. */
export const signedUrlSchema = z.object({
  /** Comma-separated modifiers, e.g. `w_800,fit_cover,h_600`. */
  modifiers: z.string().max(500).optional(),
  format: z.enum(variantExtensions()).default("auto"),
  /** Seconds until the URL expires: 1 s to 7 days. @default 3600 */
  expires_in: z
    .number()
    .int("must be an integer")
    .min(1, "must be between 1 and 604800 (7 days)")
    .max(604_800, "must be between 1 and 604800 (7 days)")
    .default(3600),
});
export type SignedUrlInput = z.input<typeof signedUrlSchema>;

/** Input of `createSignedUrl`: the image id and `{modifiers?, format?, expires_in?}`. */
export type SignedUrlRequest = ImageBodyInput<typeof signedUrlSchema>;

/** Validates a signed-URL request: the image id first, then the body. */
export function parseSignedUrlRequest(input: SignedUrlRequest): ParsedImageBody<typeof signedUrlSchema> {
  const { imageId } = parseImageId(input);
  const [body] = parseAll([[signedUrlSchema, input?.body ?? {}]] as const);
  return { imageId, body };
}

/** Answer of `POST /v1/images/{image_id}/signed-url`. */
export interface SignedUrl {
  url: string;
  /** ISO 8601, UTC. */
  expires_at: string;
}

/**
 * A variant URL of the caller's own image that serves it, published or not, until it expires: the
 * modifiers checked first, then the image and whether the variant can be made at all (the output
 * limits: a URL that could only fail is a 422 now, not later), then an `exp_` token added and the
 * whole signed.
 */
export async function createSignedUrl(
  context: PipelineContext,
  signer: VariantSigner | undefined,
  options: ResolvedDeliveryOptions,
  caller: Caller,
  input: ParsedImageBody<typeof signedUrlSchema>,
): Promise<SignedUrl> {
  const { imageId, body } = input;
  const tokens =
    body.modifiers === undefined ? [] : body.modifiers.split(",").filter((token) => token !== "");
  const own = tokens.filter((token) => tokenKey(token) !== "exp");
  const modifiers = expandPreset(parseTokens(own, options.presets), options.presets);
  const record = await loadOwnedImage(context, caller, imageId);
  const file = `${canonicalModifiers(own) || "_"}.${body.format}`;
  assertMakeable(context, options, { imageId, file, ext: body.format, tokens: own, modifiers }, record);
  if (signer === undefined || options.baseUrl === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.MODEL_NOT_CONFIGURED,
      "Variant delivery is not configured on this server (no signing key or base URL).",
    );
  }
  const expires = Math.floor(context.clock.now().getTime() / 1000) + body.expires_in;
  const canonical = canonicalModifiers([...own, `exp_${expires}`]);
  const path = `/${record.id}/${canonical}.${body.format}`;
  return {
    url: `${options.baseUrl.replace(/\/+$/, "")}/v/${await signer.sign(path)}${path}`,
    expires_at: new Date(expires * 1000).toISOString(),
  };
}

/**
 * Refuses (422) a URL whose variant could never be made: its output over the format's pixel
 * limit, a crop outside the image, a smart crop without `fit_cover`. With `auto` the format
 * follows the browser's `Accept`, so only a variant that fails for every `Accept` is refused.
 */
function assertMakeable(
  context: PipelineContext,
  options: ResolvedDeliveryOptions,
  url: ResolvedVariantUrl,
  record: ImageRecord,
): void {
  const accepts = url.ext === "auto" ? ["image/avif,image/webp", "image/webp", undefined] : [undefined];
  let refusal: unknown;
  for (const accept of accepts) {
    try {
      planVariant(context, options, url, record, accept);
      return;
    } catch (error) {
      refusal ??= error;
    }
  }
  throw refusal;
}
