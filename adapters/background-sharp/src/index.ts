export {
  createSharpBackgroundRemover,
  type SharpBackgroundRemoverOptions,
  sharpBackgroundRemoverOptionsSchema,
} from "./create-sharp-background-remover.js";
export { computeMask, type MaskResult } from "./mask.js";
