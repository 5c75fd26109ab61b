export {
  computeMask,
  createSharpBackgroundRemover,
  type MaskResult,
  type SharpBackgroundRemoverOptions,
} from "./create-sharp-background-remover.js";
export { cutoutPng, openRequestImage, type RequestImage } from "./cutout.js";
