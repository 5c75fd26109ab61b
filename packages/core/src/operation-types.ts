/**
 * The inputs and results of the pipeline's operations, published from `@pixport/core` as the
 * `Operations` namespace (`Operations.ResizeInput`, `Operations.ImageList`, ...), so the entry
 * stays short while every method's types keep a name.
 */
export type { CreateImageFromUrlInput } from "./operations/create-image-from-url.js";
export type {
  DeliveredVariant,
  SignedUrl,
  VariantRequest,
} from "./operations/deliver-variant.js";
export type { ImageMetadata } from "./operations/image-facts.js";
export type {
  DownloadedImage,
  ImageIdInput,
  ImageList,
  ListImagesRequest,
  PageCursor,
} from "./operations/manage-images.js";
export type { ImagineImageInput, ModelImageInput } from "./operations/model-operations.js";
export type { RemoveBackgroundInput } from "./operations/remove-background.js";
export type { SweepOrphansResult } from "./operations/sweep-orphans.js";
export type {
  FusedTransformInput,
  TransformInput,
} from "./operations/transform-image.js";
export type { UploadImageInput } from "./operations/upload-image.js";
export type {
  BlurInput,
  ConvertInput,
  CropInput,
  ExtractFormattedTextInput,
  ImagineInput,
  MirrorInput,
  ModulateInput,
  ResizeInput,
  RotateInput,
  TransformBodyInput,
  TransformStepInput,
  TransformStepOp,
  VisualizeInput,
  WatermarkInput,
} from "./schemas.js";
