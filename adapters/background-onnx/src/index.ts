export {
  createOnnxBackgroundRemover,
  type OnnxBackgroundRemover,
  type OnnxBackgroundRemoverOptions,
  onnxBackgroundRemoverOptionsSchema,
} from "./create-onnx-background-remover.js";
export { MODEL_PRESETS, type OnnxModelFamily, type OnnxModelPreset } from "./presets.js";
