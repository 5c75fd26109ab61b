import { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "../errors.js";
import type { VariantSigner } from "../ports/variant-cache.js";
import { parseAll } from "../schemas.js";
import { type Caller, loadOwnedImage, type PipelineContext } from "./context.js";
import { type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";
import type { ResolvedDeliveryOptions } from "./variant-options.js";
import { canonicalModifiers, parseTokens, tokenKey, variantExtensions } from "./variant-url.js";

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
 * modifiers checked first, then the image, then an `exp_` token added and the whole signed.
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
  parseTokens(
    tokens.filter((token) => tokenKey(token) !== "exp"),
    options.presets,
  );
  const record = await loadOwnedImage(context, caller, imageId);
  if (signer === undefined || options.baseUrl === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.MODEL_NOT_CONFIGURED,
      "Variant delivery is not configured on this server (no signing key or base URL).",
    );
  }
  const expires = Math.floor(context.clock.now().getTime() / 1000) + body.expires_in;
  const canonical = canonicalModifiers([
    ...tokens.filter((token) => tokenKey(token) !== "exp"),
    `exp_${expires}`,
  ]);
  const path = `/${record.id}/${canonical}.${body.format}`;
  return {
    url: `${options.baseUrl.replace(/\/+$/, "")}/v/${await signer.sign(path)}${path}`,
    expires_at: new Date(expires * 1000).toISOString(),
  };
}
