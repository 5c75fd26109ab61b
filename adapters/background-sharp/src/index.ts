export {
  computeMask,
  createSharpBackgroundRemover,
  type MaskResult,
  type SharpBackgroundRemoverOptions,
  sharpBackgroundRemoverOptionsSchema,
} from "./create-sharp-background-remover.js";
export {
  type CutoutPixels,
  cutoutPng,
  decodeCutoutPixels,
  openRequestImage,
  type RequestImage,
} from "./cutout.js";
