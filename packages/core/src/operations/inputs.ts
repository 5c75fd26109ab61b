import type { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "../errors.js";
import { imagePathSchema, parseAll } from "../schemas.js";

/*
 * The inputs of the operations, as a caller writes them (`z.input` of their schemas) and as the
 * operations receive them once validated (`z.output`). Every pipeline method validates its input
 * at run time too (JavaScript callers, HTTP bodies), with the same 422 issues either way.
 */

/** Aborts a call whose caller gave up (a client that disconnected). */
export interface Cancellable {
  /**
   * A job still waiting for a slot of the work gate or for memory is dropped; a model call is
   * aborted; codec work, short and bounded, runs to its end once started.
   */
  signal?: AbortSignal | undefined;
}

/** Identifies one stored image of the caller. */
export interface ImageIdInput {
  /** `image_` and 24 letters or digits (422 on `image_id` otherwise). */
  imageId: string;
}

/** A body that may be left out when its schema accepts `{}` (remove-background, classify). */
type BodyField<S extends z.ZodType> =
  Record<string, never> extends z.input<S> ? { body?: z.input<S> | undefined } : { body: z.input<S> };

/** Input of an operation on one stored image with a JSON body, typed from the body's schema. */
export type ImageBodyInput<S extends z.ZodType> = ImageIdInput & BodyField<S> & Cancellable;

/** {@link ImageBodyInput} once validated: the id checked and the body parsed (defaults applied). */
export interface ParsedImageBody<S extends z.ZodType> extends ImageIdInput, Cancellable {
  body: z.output<S>;
}

/** Input of an operation with a JSON body and no image (imagine). */
export type BodyInput<S extends z.ZodType> = BodyField<S> & Cancellable;

/** {@link BodyInput} once validated. */
export interface ParsedBody<S extends z.ZodType> extends Cancellable {
  body: z.output<S>;
}

/** What absent parts of an input read as when validated: no body is `{}`; `null` stays invalid. */
const bodyOf = (input: { body?: unknown } | undefined) => (input?.body === undefined ? {} : input.body);

/** Validates an image id (the path parameter `image_id`). */
export function parseImageId(input: ImageIdInput): ImageIdInput {
  const [{ image_id }] = parseAll([[imagePathSchema, { image_id: input?.imageId }]] as const);
  return { imageId: image_id };
}

/** Validates the id and the body together: one 422 lists every failing field of both. */
export function imageBodyParser<S extends z.ZodType>(schema: S) {
  return (input: ImageBodyInput<S>): ParsedImageBody<S> => {
    const [{ image_id }, body] = parseAll([
      [imagePathSchema, { image_id: input?.imageId }],
      [schema, bodyOf(input)],
    ] as const);
    return { imageId: image_id, body: body as z.output<S>, signal: input?.signal };
  };
}

/** Validates a body without an image. */
export function bodyParser<S extends z.ZodType>(schema: S) {
  return (input: BodyInput<S>): ParsedBody<S> => {
    const [body] = parseAll([[schema, bodyOf(input)]] as const);
    return { body: body as z.output<S>, signal: input?.signal };
  };
}

/**
 * A dependency the call needs that the pipeline was built without (a library user who only
 * transforms images needs no key store and no publisher): a configuration error saying which.
 */
export function missingDependency(dependency: "keys" | "publisher", operation: string): ImagePipelineError {
  const port = dependency === "keys" ? "a KeyStore" : "an ImagePublisher";
  return new ImagePipelineError(
    ErrorCodes.INVALID_CONFIGURATION,
    `${operation} needs \`${dependency}\` (${port}): pass it in createImagePipeline's deps.`,
  );
}
