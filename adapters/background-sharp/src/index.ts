export {
  computeMask,
  createSharpBackgroundRemover,
  type MaskResult,
  type SharpBackgroundRemoverOptions,
  sharpBackgroundRemoverOptionsSchema,
} from "./create-sharp-background-remover.js";
export { cutoutPng, openRequestImage, type RequestImage } from "./cutout.js";
