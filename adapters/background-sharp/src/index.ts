export {
  computeMask,
  createSharpBackgroundRemover,
  type MaskResult,
  type SharpBackgroundRemoverOptions,
} from "./create-sharp-background-remover.js";
