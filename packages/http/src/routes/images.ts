import {
  type Caller,
  ErrorCodes,
  IMAGE_FORMATS,
  type Image,
  ImagePipelineError,
  OPERATIONS_TABLE,
  type OperationId,
  type OperationInput,
} from "@pixport/core";
import { BROWSER_FORMATS, formatList, formatSpellings, MIME_TYPES } from "@pixport/core/adapter-kit";
import { imagePathSchema, listImagesSchema } from "@pixport/core/internal";
import {
  classificationSchema,
  extractedTextSchema,
  imageListSchema,
  imageMetadataSchema,
  imageSchema,
  signedUrlResponseSchema,
  uploadImageFormSchema,
  variantPathSchema,
  visualizeResponseSchema,
} from "../response-schemas.js";
import { acceptOf, hintsOf, originVariantRoute, variantAnswer } from "./delivery.js";
import type { OwnRoute, Route, RouteContext, RouteResult } from "./route.js";

const image =
  (status: number) =>
  (value: Image): RouteResult => ({ kind: "json", status, body: value });
const isMultipart = (type: string | undefined) => type === "multipart/form-data";

function upload(context: RouteContext): Promise<RouteResult> {
  return context.pipeline
    .uploadImage(
      context.caller,
      unchecked({ name: context.multipart?.fields.get("name"), image: context.multipart?.file }),
    )
    .then(image(201));
}

/** Operations of the table on one stored image with a JSON body (transforms and model calls). */
type ImageOperation = {
  [K in OperationId]: OperationInput<K> extends { imageId: string; body?: unknown } ? K : never;
}[OperationId];

/**
 * A request's raw values handed to a typed pipeline method. The method validates them at run time
 * with the operation's schemas (the same 422 issues a library caller gets), so this is the one
 * place where the wire's `unknown` meets the typed API, and it is checked right there.
 */
const unchecked = <T>(value: unknown): T => value as T;

/** The `{image_id}` path parameter of a route, validated by the operation it is handed to. */
const imageIdOf = (context: RouteContext): { imageId: string } =>
  unchecked({ imageId: context.params.image_id });

/** The method and path of an operation's first route in the core's table. */
function routeOf(operationId: OperationId): { method: Route["method"]; path: string } {
  const [method, path] = (OPERATIONS_TABLE[operationId].routes[0] ?? "").split(" ");
  return { method: method as Route["method"], path: path ?? "" };
}

/**
 * `POST /v1/images/{image_id}/<op>` with a JSON body, answering 201: every transform (the answer is
 * the new Image) and the model calls on an image (their own answer schema). The path and the body
 * schema come from the operation's row in the core's table.
 */
function imageRoute(
  operationId: ImageOperation,
  summary: string,
  responseSchema: Route["responseSchema"] = imageSchema,
): OwnRoute {
  return {
    operationId,
    ...routeOf(operationId),
    summary,
    auth: true,
    body: "json",
    bodySchema: OPERATIONS_TABLE[operationId].schema,
    paramsSchema: imagePathSchema,
    responseSchema,
    successStatus: 201,
    invoke: (context) => {
      const operation = context.pipeline[operationId] as (
        caller: Caller,
        input: OperationInput<ImageOperation>,
      ) => Promise<unknown>;
      return operation
        .call(
          context.pipeline,
          context.caller,
          unchecked({ imageId: context.params.image_id, body: context.body, signal: context.request.signal }),
        )
        .then((body): RouteResult => ({ kind: "json", status: 201, body }));
    },
  };
}

function link(baseUrl: string, cursor: { take: number; from: string } | null): string | null {
  if (cursor === null) return null;
  const query = new URLSearchParams({ take: String(cursor.take), from: cursor.from });
  return `${baseUrl}/v1/images?${query.toString()}`;
}

/** Every route of the IMG Processing API that pixport serves, in documentation order. */
export const imageRoutes: readonly OwnRoute[] = [
  {
    operationId: "uploadImage",
    method: "POST",
    path: "/v1/images/upload",
    summary: "Upload an image (multipart/form-data with `name` and `image`).",
    auth: true,
    body: "multipart",
    bodySchema: uploadImageFormSchema,
    responseSchema: imageSchema,
    successStatus: 201,
    invoke: upload,
  },
  {
    operationId: "uploadImage",
    method: "POST",
    path: "/v1/images",
    summary: "Upload an image (multipart/form-data), the seed's form of the upload route.",
    auth: true,
    body: "multipart",
    bodySchema: uploadImageFormSchema,
    responseSchema: imageSchema,
    successStatus: 201,
    accepts: isMultipart,
    invoke: upload,
  },
  {
    operationId: "createImageFromUrl",
    method: "POST",
    path: "/v1/images",
    summary: "Create an image from a URL on an allowed origin (JSON `{name, url}`).",
    auth: true,
    body: "json",
    bodySchema: OPERATIONS_TABLE.createImageFromUrl.schema,
    responseSchema: imageSchema,
    successStatus: 201,
    accepts: (type) => !isMultipart(type),
    invoke: (context) =>
      context.pipeline.createImageFromUrl(context.caller, unchecked({ body: context.body })).then(image(201)),
  },
  {
    // Before every `/v1/images/{image_id}` route, so `imagine` is never read as an image id.
    operationId: "imagineImage",
    method: "POST",
    path: "/v1/images/imagine",
    summary: "Create a 1024 x 1024 JPEG image from a prompt (models sdxl, flux; default sdxl).",
    auth: true,
    body: "json",
    bodySchema: OPERATIONS_TABLE.imagineImage.schema,
    responseSchema: imageSchema,
    successStatus: 201,
    invoke: (context) =>
      context.pipeline
        .imagineImage(context.caller, unchecked({ body: context.body, signal: context.request.signal }))
        .then(image(201)),
  },
  {
    operationId: "listImages",
    method: "GET",
    path: "/v1/images",
    summary: "List the caller's images of its stage, newest first.",
    auth: true,
    body: "none",
    querySchema: listImagesSchema,
    responseSchema: imageListSchema,
    successStatus: 200,
    invoke: async (context) => {
      const query = context.request.query;
      const single = (name: string) => {
        const values = query.getAll(name);
        return values.length > 1 ? values : values[0];
      };
      const page = await context.pipeline.listImages(
        context.caller,
        unchecked({ take: single("take"), from: single("from") }),
      );
      return {
        kind: "json",
        status: 200,
        body: {
          data: page.data,
          links: { previous: link(context.baseUrl, page.previous), next: link(context.baseUrl, page.next) },
        },
      };
    },
  },
  {
    operationId: "getImage",
    method: "GET",
    path: "/v1/images/{image_id}",
    summary: "Retrieve one image.",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    responseSchema: imageSchema,
    successStatus: 200,
    invoke: (context) => context.pipeline.getImage(context.caller, imageIdOf(context)).then(image(200)),
  },
  {
    operationId: "getImageMetadata",
    method: "GET",
    path: "/v1/images/{image_id}/metadata",
    summary:
      "Size, format, frames, transparency, dominant colour and ThumbHash/BlurHash placeholders of one image (pixport's own route; not billed).",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    responseSchema: imageMetadataSchema,
    successStatus: 200,
    invoke: async (context) => ({
      kind: "json",
      status: 200,
      body: await context.pipeline.getImageMetadata(context.caller, imageIdOf(context)),
    }),
  },
  {
    operationId: "createSignedUrl",
    method: "POST",
    path: "/v1/images/{image_id}/signed-url",
    summary:
      "An expiring, signed variant URL for one of your images (private ones too), e.g. for a page behind a login (pixport's own route; not billed).",
    auth: true,
    body: "json",
    bodySchema: OPERATIONS_TABLE.createSignedUrl.schema,
    paramsSchema: imagePathSchema,
    responseSchema: signedUrlResponseSchema,
    successStatus: 200,
    invoke: async (context) => ({
      kind: "json",
      status: 200,
      body: await context.pipeline.createSignedUrl(
        context.caller,
        unchecked({ imageId: context.params.image_id, body: context.body }),
      ),
    }),
  },
  {
    operationId: "deliverVariant",
    method: "GET",
    path: "/v/{signature}/{image_id}/{variant}",
    summary:
      "A variant of a published image at a signed, cacheable URL: `{variant}` is `{modifiers}.{ext}` with comma-separated modifiers (w_, h_, fit_, pos_, dpr_, q_, rot_, flip_, blur_, crop_x1:y1:x2:y2, bg_, p_, exp_) and ext " +
      `${BROWSER_FORMATS.flatMap((format) => formatSpellings([format])).join(", ")} or auto (chosen from Accept). No key; HEAD answers the headers.`,
    auth: false,
    body: "none",
    paramsSchema: variantPathSchema,
    responseMediaTypes: BROWSER_FORMATS.map((format) => MIME_TYPES[format]),
    successStatus: 200,
    invoke: async (context) => {
      // One spelling per variant (a CDN keys its cache by the URL as sent): no trailing slash and
      // no percent-encoding, which no URL the signer writes contains.
      if (context.request.path.endsWith("/") || context.request.path.includes("%")) {
        throw new ImagePipelineError(
          ErrorCodes.ROUTE_NOT_FOUND,
          `Variant URLs have one spelling, without a trailing slash or percent-encoding: not ${context.request.path}.`,
        );
      }
      const variant = await context.pipeline.deliverVariant({
        signature: context.params.signature ?? "",
        imageId: context.params.image_id ?? "",
        file: context.params.variant ?? "",
        accept: acceptOf(context),
        hints: hintsOf(context),
        signal: context.request.signal,
      });
      return variantAnswer(context, variant);
    },
  },
  originVariantRoute,
  {
    operationId: "deleteImage",
    method: "DELETE",
    path: "/v1/images/{image_id}",
    summary: "Delete an image, its bytes and its public copy.",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    successStatus: 204,
    invoke: async (context) => {
      await context.pipeline.deleteImage(context.caller, imageIdOf(context));
      return { kind: "empty", status: 204 };
    },
  },
  {
    operationId: "downloadImage",
    method: "GET",
    path: "/v1/images/{image_id}/download",
    summary: "Download the image bytes.",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    responseMediaTypes: Object.values(MIME_TYPES),
    successStatus: 200,
    invoke: async (context) => {
      const result = await context.pipeline.downloadImage(context.caller, imageIdOf(context));
      return {
        kind: "binary",
        status: 200,
        contentType: result.contentType,
        data: result.data,
        etag: `"${result.image.id}"`,
      };
    },
  },
  {
    operationId: "publishImage",
    method: "POST",
    path: "/v1/images/{image_id}/publish",
    summary: "Publish an image at a public URL.",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    responseSchema: imageSchema,
    successStatus: 201,
    invoke: (context) => context.pipeline.publishImage(context.caller, imageIdOf(context)).then(image(201)),
  },
  {
    operationId: "unpublishImage",
    method: "POST",
    path: "/v1/images/{image_id}/unpublish",
    summary: "Remove the public copy of an image.",
    auth: true,
    body: "none",
    paramsSchema: imagePathSchema,
    responseSchema: imageSchema,
    successStatus: 201,
    invoke: (context) => context.pipeline.unpublishImage(context.caller, imageIdOf(context)).then(image(201)),
  },
  imageRoute("mirrorImage", "Mirror an image horizontally, vertically or both."),
  imageRoute("convertImage", `Convert an image to ${formatList(IMAGE_FORMATS)}.`),
  imageRoute("resizeImage", "Resize an image (fill, contain, cover)."),
  imageRoute(
    "transformImage",
    "Run up to 10 steps (resize, crop, rotate, mirror, modulate, blur, watermark, convert) in one decode and one encode; one new image, billed once.",
  ),
  imageRoute("cropImage", "Crop an image to a box."),
  imageRoute("rotateImage", "Rotate an image clockwise."),
  imageRoute("modulateImage", "Adjust brightness, saturation, hue, lightness, exposure and contrast."),
  imageRoute("blurImage", "Gaussian blur."),
  imageRoute(
    "removeImageBackground",
    "Remove the background (JSON `{}`, `{name}` or no body); always a PNG with transparency. Billed as 2.",
  ),
  imageRoute("watermarkImage", "Draw other images over an image."),
  imageRoute(
    "visualizeImage",
    "Answer a prompt about an image (models uform-gen, llava, gemini; default uform-gen).",
    visualizeResponseSchema,
  ),
  imageRoute(
    "classifyImage",
    "Classify an image (JSON `{}` or no body). Test keys get a masked result.",
    classificationSchema,
  ),
  imageRoute(
    "extractFormattedText",
    "Extract the text of an image as markdown or plain text (live keys only).",
    extractedTextSchema,
  ),
];
