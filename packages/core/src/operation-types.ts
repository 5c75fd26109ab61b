import type { CreateImageFromUrlInput } from "./operations/create-image-from-url.js";
import type { DeliveredVariant, SignedUrl, VariantRequest } from "./operations/deliver-variant.js";
import type { ImageMetadata } from "./operations/image-facts.js";
import type {
  DownloadedImage,
  ImageIdInput,
  ImageList,
  ListImagesRequest,
  PageCursor,
} from "./operations/manage-images.js";
import type { ImagineImageInput, ModelImageInput } from "./operations/model-operations.js";
import type { RemoveBackgroundInput } from "./operations/remove-background.js";
import type { SweepOrphansResult } from "./operations/sweep-orphans.js";
import type { FusedTransformInput, TransformInput } from "./operations/transform-image.js";
import type { UploadImageInput } from "./operations/upload-image.js";
import type {
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

/** Every operation type under its name: what the namespace below reads. */
interface OperationTypeMap {
  BlurInput: BlurInput;
  ConvertInput: ConvertInput;
  CreateImageFromUrlInput: CreateImageFromUrlInput;
  CropInput: CropInput;
  DeliveredVariant: DeliveredVariant;
  DownloadedImage: DownloadedImage;
  ExtractFormattedTextInput: ExtractFormattedTextInput;
  FusedTransformInput: FusedTransformInput;
  ImageIdInput: ImageIdInput;
  ImageList: ImageList;
  ImageMetadata: ImageMetadata;
  ImagineImageInput: ImagineImageInput;
  ImagineInput: ImagineInput;
  ListImagesRequest: ListImagesRequest;
  MirrorInput: MirrorInput;
  ModelImageInput: ModelImageInput;
  ModulateInput: ModulateInput;
  PageCursor: PageCursor;
  RemoveBackgroundInput: RemoveBackgroundInput;
  ResizeInput: ResizeInput;
  RotateInput: RotateInput;
  SignedUrl: SignedUrl;
  SweepOrphansResult: SweepOrphansResult;
  TransformBodyInput: TransformBodyInput;
  TransformInput: TransformInput;
  TransformStepInput: TransformStepInput;
  TransformStepOp: TransformStepOp;
  UploadImageInput: UploadImageInput;
  VariantRequest: VariantRequest;
  VisualizeInput: VisualizeInput;
  WatermarkInput: WatermarkInput;
}

/**
 * The inputs and results of the pipeline's operations, published from `@pixport/core` as the
 * `Operations` namespace (`Operations.ResizeInput`, `Operations.ImageList`, ...), so the entry
 * stays short while every method's types keep a name. A declared namespace of aliases into one
 * map: `export type * as` would come out of the bundled declaration files as values, and aliases
 * of the imported names as self-references.
 */
export declare namespace Operations {
  export type BlurInput = OperationTypeMap["BlurInput"];
  export type ConvertInput = OperationTypeMap["ConvertInput"];
  export type CreateImageFromUrlInput = OperationTypeMap["CreateImageFromUrlInput"];
  export type CropInput = OperationTypeMap["CropInput"];
  export type DeliveredVariant = OperationTypeMap["DeliveredVariant"];
  export type DownloadedImage = OperationTypeMap["DownloadedImage"];
  export type ExtractFormattedTextInput = OperationTypeMap["ExtractFormattedTextInput"];
  export type FusedTransformInput = OperationTypeMap["FusedTransformInput"];
  export type ImageIdInput = OperationTypeMap["ImageIdInput"];
  export type ImageList = OperationTypeMap["ImageList"];
  export type ImageMetadata = OperationTypeMap["ImageMetadata"];
  export type ImagineImageInput = OperationTypeMap["ImagineImageInput"];
  export type ImagineInput = OperationTypeMap["ImagineInput"];
  export type ListImagesRequest = OperationTypeMap["ListImagesRequest"];
  export type MirrorInput = OperationTypeMap["MirrorInput"];
  export type ModelImageInput = OperationTypeMap["ModelImageInput"];
  export type ModulateInput = OperationTypeMap["ModulateInput"];
  export type PageCursor = OperationTypeMap["PageCursor"];
  export type RemoveBackgroundInput = OperationTypeMap["RemoveBackgroundInput"];
  export type ResizeInput = OperationTypeMap["ResizeInput"];
  export type RotateInput = OperationTypeMap["RotateInput"];
  export type SignedUrl = OperationTypeMap["SignedUrl"];
  export type SweepOrphansResult = OperationTypeMap["SweepOrphansResult"];
  export type TransformBodyInput = OperationTypeMap["TransformBodyInput"];
  export type TransformInput = OperationTypeMap["TransformInput"];
  export type TransformStepInput = OperationTypeMap["TransformStepInput"];
  export type TransformStepOp = OperationTypeMap["TransformStepOp"];
  export type UploadImageInput = OperationTypeMap["UploadImageInput"];
  export type VariantRequest = OperationTypeMap["VariantRequest"];
  export type VisualizeInput = OperationTypeMap["VisualizeInput"];
  export type WatermarkInput = OperationTypeMap["WatermarkInput"];
}
