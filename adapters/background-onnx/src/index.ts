export {
  createOnnxBackgroundRemover,
  type OnnxBackgroundRemover,
  type OnnxBackgroundRemoverOptions,
} from "./create-onnx-background-remover.js";
export { MODEL_PRESETS, type OnnxModelFamily, type OnnxModelPreset } from "./presets.js";
