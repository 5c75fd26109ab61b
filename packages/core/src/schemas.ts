import { z } from "zod";
import { type ValidationIssue, validationError } from "./errors.js";
import {
  formatFromSpelling,
  formatSpellings,
  IMAGE_FORMATS,
  IMAGE_ID_PATTERN,
  type ImageFormat,
} from "./image.js";
import { parseColor } from "./transforms/color.js";

/*
 * Request schemas with the contract's bounds and defaults. Messages are written without the field
 * name; `formatIssues` prefixes the dotted path, giving the contract's `<field> <message>` strings.
 * Objects are not strict: unknown fields are ignored, as the original service does.
 */

const required = (message: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? "is required" : message;

const nameField = z
  .string({ error: required("must be a string") })
  .min(1, "must be between 1 and 30 characters long")
  .max(30, "must be between 1 and 30 characters long");

const integerBetween = (min: number, max: number) => {
  const message = `must be an integer between ${min} and ${max}`;
  return z
    .number({ error: required(message) })
    .int(message)
    .min(min, message)
    .max(max, message);
};

const numberBetween = (min: number, max: number) => {
  const message = `must be a number between ${min} and ${max}`;
  return z
    .number({ error: required(message) })
    .min(min, message)
    .max(max, message);
};

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: required(`must be one of: ${values.join(", ")}`) });

/** An image id path or body field. */
export const imageIdSchema = z
  .string({ error: required("must be a valid image id") })
  .regex(IMAGE_ID_PATTERN, "must be a valid image id");

/** A colour string (CSS name, `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, `transparent`). */
export const colorSchema = z
  .string({ error: required("must be a colour string") })
  .refine((value) => parseColor(value) !== null, {
    message: "must be a CSS colour name, #rgb, #rrggbb, #rrggbbaa or transparent",
  });

const optionalName = { name: nameField.optional() };

export const uploadImageSchema = z.object({ name: nameField });

/** Body of `POST /v1/images` (JSON): create an image from a URL on an allowed origin. */
export const createImageFromUrlSchema = z.object({
  name: nameField,
  url: z.string({ error: required("must be a string") }).max(4096, "must be at most 4096 characters long"),
});

export const listImagesSchema = z.object({
  take: integerBetween(1, 100).default(10),
  from: imageIdSchema.optional(),
});

export const mirrorSchema = z.object({ mode: oneOf(["horizontal", "vertical", "both"]), ...optionalName });

export const convertSchema = z.object({
  format: oneOf(formatSpellings(IMAGE_FORMATS)).transform(
    (value) => formatFromSpelling(value) as ImageFormat,
  ),
  /**
   * 1..100, or `"auto"` (pixport's extension): the lowest quality that keeps the `good` level's SSIM
   * target, chosen per image by the codec (its default quality for a format it cannot choose for).
   * @default 100
   */
  quality: z
    .union([z.literal("auto"), integerBetween(1, 100)], { error: "must be an integer between 1 and 100" })
    .default(100),
  ...optionalName,
});

export const POSITIONS = [
  "center",
  "top",
  "right",
  "bottom",
  "left",
  "top-left",
  "top-right",
  "bottom-left",
  "bottom-right",
  /** Smart crops (`fit: cover` only): the busiest region. */
  "entropy",
  /** Smart crops (`fit: cover` only): the most salient region (skin, saturation, edges). */
  "attention",
] as const;

export const resizeSchema = z
  .object({
    width: integerBetween(1, 10000).optional(),
    height: integerBetween(1, 10000).optional(),
    fit: oneOf(["fill", "contain", "cover"]).default("fill"),
    position: oneOf(POSITIONS).default("center"),
    letterbox_color: colorSchema.optional(),
    ...optionalName,
  })
  .superRefine((value, context) => {
    if (value.width === undefined && value.height === undefined) {
      context.addIssue({ code: "custom", path: ["width"], message: "is required when height is not given" });
    }
  });

const coordinate = z
  .number({ error: required("must be an integer greater than or equal to 0") })
  .int("must be an integer")
  .min(0, "must be an integer greater than or equal to 0");

export const cropSchema = z.object({
  x1: coordinate,
  y1: coordinate,
  x2: coordinate,
  y2: coordinate,
  ...optionalName,
});

export const rotateSchema = z.object({
  angle: z.number({ error: required("must be a number") }).refine(Number.isFinite, "must be a finite number"),
  unit: oneOf(["degrees", "radians"]).default("degrees"),
  background_color: colorSchema.optional(),
  ...optionalName,
});

const MODULATE_FIELDS = ["brightness", "saturation", "exposure", "contrast", "lightness", "hue"] as const;

export const modulateSchema = z
  .object({
    brightness: numberBetween(-100, 100).optional(),
    saturation: numberBetween(-100, 100).optional(),
    exposure: numberBetween(-100, 100).optional(),
    contrast: numberBetween(-100, 100).optional(),
    lightness: numberBetween(-100, 100).optional(),
    hue: integerBetween(-360, 360).optional(),
    ...optionalName,
  })
  .superRefine((value, context) => {
    if (MODULATE_FIELDS.every((field) => value[field] === undefined)) {
      context.addIssue({
        code: "custom",
        path: ["body"],
        message: `must contain at least one of: ${MODULATE_FIELDS.join(", ")}`,
      });
    }
  });

export const blurSchema = z.object({
  /** @default 20 */
  sigma: numberBetween(1, 1000).default(20),
  ...optionalName,
});

export const watermarkEntrySchema = z.object({
  id: imageIdSchema,
  left: numberBetween(-10000, 10000).default(0),
  top: numberBetween(-10000, 10000).default(0),
  width: integerBetween(1, 10000).optional(),
  height: integerBetween(1, 10000).optional(),
  repetition_mode: oneOf(["no-repeat", "repeat", "repeat-x", "repeat-y"]).default("no-repeat"),
});

export const watermarkSchema = z.object({
  watermarks: z
    .array(watermarkEntrySchema, { error: required("must be an array of 1 to 5 watermarks") })
    .min(1, "must be an array of 1 to 5 watermarks")
    .max(5, "must be an array of 1 to 5 watermarks"),
  ...optionalName,
});

const promptField = z
  .string({ error: required("must be a string") })
  .min(1, "must be between 1 and 1000 characters long")
  .max(1000, "must be between 1 and 1000 characters long");

/** Models of `imagine` (contract 5.3; default `sdxl`, P14). */
export const IMAGINE_MODELS = ["sdxl", "flux"] as const;
/** Models of `visualize` (contract 5.19; default `uform-gen`, P15). */
export const VISUALIZE_MODELS = ["uform-gen", "llava", "gemini"] as const;

/** Body of `POST /v1/images/imagine`. */
/** The operations a step of `POST /v1/images/{image_id}/transform` may run, with their schemas. */
export const TRANSFORM_STEP_SCHEMAS = {
  resize: resizeSchema,
  crop: cropSchema,
  rotate: rotateSchema,
  mirror: mirrorSchema,
  modulate: modulateSchema,
  blur: blurSchema,
  watermark: watermarkSchema,
  convert: convertSchema,
} as const;

export type TransformStepOp = keyof typeof TRANSFORM_STEP_SCHEMAS;
export const TRANSFORM_STEP_OPS = Object.keys(TRANSFORM_STEP_SCHEMAS) as TransformStepOp[];
/** Most steps in one fused transform. */
export const MAX_TRANSFORM_STEPS = 10;

/**
 * One step of a fused transform: `op` names the operation; the other fields are exactly those of
 * the single operation (`name` aside: the result is named once, at the top level).
 */
export const transformStepSchema = z.discriminatedUnion("op", [
  resizeSchema.safeExtend({ op: z.literal("resize") }),
  cropSchema.safeExtend({ op: z.literal("crop") }),
  rotateSchema.safeExtend({ op: z.literal("rotate") }),
  mirrorSchema.safeExtend({ op: z.literal("mirror") }),
  modulateSchema.safeExtend({ op: z.literal("modulate") }),
  blurSchema.safeExtend({ op: z.literal("blur") }),
  watermarkSchema.safeExtend({ op: z.literal("watermark") }),
  convertSchema.safeExtend({ op: z.literal("convert") }),
]);

/** Body of `POST /v1/images/{image_id}/transform` (validated step by step by the core). */
export const transformSchema = z.object({
  steps: z
    .array(transformStepSchema)
    .min(1, `must be an array of 1 to ${MAX_TRANSFORM_STEPS} steps`)
    .max(MAX_TRANSFORM_STEPS, `must be an array of 1 to ${MAX_TRANSFORM_STEPS} steps`),
  ...optionalName,
});

export const imagineSchema = z.object({
  name: nameField,
  prompt: promptField,
  negative_prompt: promptField.optional(),
  seed: z
    .number({ error: required("must be an integer greater than or equal to 0") })
    .int("must be an integer greater than or equal to 0")
    .min(0, "must be an integer greater than or equal to 0")
    .optional(),
  model: oneOf(IMAGINE_MODELS).optional(),
});

/** Body of `POST /v1/images/{image_id}/visualize`. */
export const visualizeSchema = z.object({
  prompt: promptField,
  model: oneOf(VISUALIZE_MODELS).optional(),
});

/** Body of `POST /v1/images/{image_id}/classify`: `{}` or no body at all. */
export const classifySchema = z.object({});

/** Body of `POST /v1/images/{image_id}/remove-background`: `{}`, `{name}` or no body at all. */
export const removeBackgroundSchema = z.object({ ...optionalName });

/** Body of `POST /v1/images/{image_id}/extract-formatted-text` (`format` required, our reading). */
export const extractFormattedTextSchema = z.object({ format: oneOf(["markdown", "plain"]) });

/** Path parameters of every `/v1/images/{image_id}...` route. */
export const imagePathSchema = z.object({ image_id: imageIdSchema });

export type ListImagesInput = z.input<typeof listImagesSchema>;
export type MirrorInput = z.input<typeof mirrorSchema>;
export type ConvertInput = z.input<typeof convertSchema>;
export type ResizeInput = z.input<typeof resizeSchema>;
export type CropInput = z.input<typeof cropSchema>;
export type RotateInput = z.input<typeof rotateSchema>;
export type ModulateInput = z.input<typeof modulateSchema>;
export type BlurInput = z.input<typeof blurSchema>;
export type TransformStepInput = z.input<typeof transformStepSchema>;
export type TransformBodyInput = z.input<typeof transformSchema>;
export type WatermarkInput = z.input<typeof watermarkSchema>;
export type ImagineInput = z.input<typeof imagineSchema>;
export type VisualizeInput = z.input<typeof visualizeSchema>;
export type ExtractFormattedTextInput = z.input<typeof extractFormattedTextSchema>;
export type WatermarkEntry = z.output<typeof watermarkEntrySchema>;

/** Edit distance of two short strings (field names). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/**
 * When a body fails validation, every field it sent that the operation does not know is named too,
 * since one is most likely why a required field is "missing": with a hint when it is one or two
 * edits from a known field (`widht` for `width`), else with the list of the fields the operation
 * takes. A body that passes validation is never refused for extra fields (clients such as the
 * official SDK send a few).
 */
function misspeltFields(schema: z.ZodType, value: unknown): ValidationIssue[] {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  if (shape === undefined || typeof value !== "object" || value === null || Array.isArray(value)) return [];
  const known = Object.keys(shape);
  const issues: ValidationIssue[] = [];
  for (const field of Object.keys(value)) {
    if (known.includes(field)) continue;
    const near = known
      .map((candidate) => ({ candidate, cost: distance(field.toLowerCase(), candidate.toLowerCase()) }))
      .filter(({ cost }) => cost <= (field.length <= 3 ? 1 : 2))
      .sort((x, y) => x.cost - y.cost)[0];
    issues.push({
      path: field,
      message:
        near === undefined
          ? `is not a field of this request (it takes ${known.join(", ")})`
          : `is not a field of this request (did you mean ${near.candidate}?)`,
    });
  }
  return issues;
}

/** Turns zod issues into `<path> <message>` issues. A non-object body is reported as `body`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): ValidationIssue[] {
  return issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    if (path === "") {
      return { path: "body", message: "must be a JSON object" };
    }
    return { path, message: issue.message };
  });
}

/**
 * Validates `input` against several schemas at once (e.g. the path and the body) and throws one
 * `VALIDATION_FAILED` error that lists every failing field of all of them.
 */
export function parseAll<const T extends readonly z.ZodType[]>(
  pairs: { [K in keyof T]: [T[K], unknown] },
): { [K in keyof T]: z.output<T[K]> } {
  const issues: ValidationIssue[] = [];
  const results = pairs.map(([schema, value]) => {
    const result = schema.safeParse(value);
    if (!result.success) issues.push(...formatIssues(result.error.issues), ...misspeltFields(schema, value));
    return result.success ? result.data : undefined;
  });
  if (issues.length > 0) throw validationError(issues);
  return results as { [K in keyof T]: z.output<T[K]> };
}
