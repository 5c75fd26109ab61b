export {
  createTesseractTextExtractor,
  TESSERACT_MODEL,
  type TesseractEngine,
  type TesseractTextExtractor,
  type TesseractTextExtractorOptions,
  tesseractTextExtractorOptionsSchema,
} from "./create-tesseract-text-extractor.js";
export {
  type LayoutOptions,
  layoutToMarkdown,
  layoutToPlain,
  type OcrBlock,
  type OcrBox,
  type OcrLine,
  type OcrParagraph,
  type OcrWord,
} from "./layout.js";
export { DECODE_BYTES_PER_PIXEL, READ_BYTES_PER_PIXEL } from "./recognizer.js";
