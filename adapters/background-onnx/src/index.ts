export { createOnnxBackgroundRemover } from "./create-onnx-background-remover.js";
export { MODEL_PRESETS, type OnnxModelFamily, type OnnxModelPreset } from "./presets.js";
export {
  type OnnxBackgroundRemover,
  type OnnxBackgroundRemoverOptions,
  onnxBackgroundRemoverOptionsSchema,
} from "./settings.js";
