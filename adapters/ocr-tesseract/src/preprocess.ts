import { setImmediate as turn } from "node:timers/promises";
import type { ModelImage } from "@pixport/core";
import sharp from "sharp";
import { stretchContrast } from "./contrast.js";
import { measureSkew } from "./deskew.js";
import { cropPage, type GreyPage, type Region } from "./grey-page.js";
import { inkBounds } from "./ink.js";
import { estimateLineHeight, scaleFor, TARGET_LINE_HEIGHT } from "./line-height.js";
import { eraseRules, findRuleLines, moveRules, type Rules, scaleRules } from "./rules.js";

/** The extractor's options the pre-processing reads (see its options schema). */
export interface PreprocessOptions {
  /** Pages without a measurable text line and a longest side below this are upscaled to it. */
  upscaleBelow: number;
  /** Most pixels of the page tesseract is given. */
  maxPagePixels: number;
}

/**
 * The page tesseract reads: greyscale, contrast stretched (2 % to 99 %, see `stretchContrast`),
 * straightened, ruling lines found and painted white (they go to the layout step instead), then
 * scaled so the body text's line height is about {@link TARGET_LINE_HEIGHT} px, and handed over
 * losslessly (binary PGM).
 */
export async function preprocess(
  image: ModelImage,
  options: PreprocessOptions,
): Promise<{ page: GreyPage; rules: Rules }> {
  const page = await straightGrey(image);
  const { width, height } = page;
  await turn();
  // The text's line height before the rules are known (a ruled table's columns can count as
  // one tall line, the median is the body text's): rules are longer than a few lines of text.
  const lineHeight = estimateLineHeight(page.grey, width, height);
  await turn();
  const horizontal = findRuleLines(page.grey, width, height, "horizontal", { lineHeight });
  await turn();
  const rules = { horizontal, vertical: findRuleLines(page.grey, width, height, "vertical", { lineHeight }) };
  eraseRules(page.grey, width, height, rules);
  await turn();
  const textLine = estimateLineHeight(page.grey, width, height);
  const wanted =
    textLine === undefined ? fallbackFactor(width, height, options.upscaleBelow) : scaleFor(textLine);
  // Within 5 % of the text size wanted, the page is not resampled (nor its rules scaled).
  const { scaled, factor, cut } = await scaleAroundInk(
    page,
    Math.abs(wanted - 1) > 0.05 ? wanted : 1,
    options.maxPagePixels,
  );
  return { page: scaled, rules: moveRules(scaleRules(rules, factor), -cut.left, -cut.top) };
}

/**
 * The image decoded to grey, contrast stretched and straightened. Each step is synchronous
 * JavaScript over the page (0.2-4 ms each on 4 megapixels since the scans step over paper a word
 * at a time; 10-20 ms each before): the event loop gets a turn between them, so the host's other
 * requests wait for one step, not for the page.
 */
async function straightGrey(image: ModelImage): Promise<GreyPage> {
  const { data, info } = await sharp(image.data, { failOn: "error" })
    .flatten({ background: "#ffffff" })
    // The same bytes as grayscale(), about 7 ms sooner on a 4-megapixel RGBA page.
    .toColourspace("b-w")
    .raw()
    .toBuffer({ resolveWithObject: true });
  const grey: Uint8Array = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  stretchContrast(grey, 0.02, 0.99);
  const { width, height } = info;
  await turn();
  const skew = measureSkew(grey, width, height);
  if (Math.abs(skew) < 0.2) return { grey, width, height };
  const straight = await sharp(grey, { raw: { width, height, channels: 1 } })
    .rotate(-skew, { background: "#ffffff" })
    .toColourspace("b-w") // one band out, not three (the same bytes as extracting one, faster)
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    grey: new Uint8Array(straight.data.buffer, straight.data.byteOffset, straight.data.byteLength),
    width: straight.info.width,
    height: straight.info.height,
  };
}

/**
 * The part of the page scaled by `factor` that holds its ink (see {@link inkCut}), made at a
 * smaller scale when it would exceed `maxPagePixels`; with the factor used and the cut (in the
 * scaled page's px).
 */
async function scaleAroundInk(
  page: GreyPage,
  wanted: number,
  maxPagePixels: number,
): Promise<{ scaled: GreyPage; factor: number; cut: Region }> {
  const { width, height } = page;
  let factor = wanted;
  let scaledWidth = Math.max(1, Math.round(width * factor));
  let scaledHeight = Math.max(1, Math.round(height * factor));
  // Only the part of the scaled page around the ink is made: libvips computes the pixels an
  // extract asks for and no others, and they are the same bytes as in the whole scaled page
  // (checked), so what tesseract reads does not change, at about half the resampling and memory
  // on the suite's pages. The margin, two text lines, holds the page pass's own (one line).
  const ink = inkBounds(page.grey, width, height, 0);
  let cut = inkCut(ink, factor, scaledWidth, scaledHeight);
  // A cut over maxPagePixels is made at a smaller scale (the margin does not shrink with it, so
  // a second try may be needed).
  for (let attempt = 0; cut.width * cut.height > maxPagePixels && attempt < 8; attempt += 1) {
    factor *= Math.sqrt(maxPagePixels / (cut.width * cut.height)) * 0.995;
    scaledWidth = Math.max(1, Math.round(width * factor));
    scaledHeight = Math.max(1, Math.round(height * factor));
    cut = inkCut(ink, factor, scaledWidth, scaledHeight);
  }
  let grey = page.grey;
  if (factor !== 1) {
    let scaling = sharp(grey, { raw: { width, height, channels: 1 } }).resize(scaledWidth, scaledHeight, {
      kernel: factor > 1 ? "cubic" : "lanczos3",
    });
    if (cut.width < scaledWidth || cut.height < scaledHeight) scaling = scaling.extract(cut);
    const scaled = await scaling
      .toColourspace("b-w") // one band out, not three (the same bytes as extracting one, faster)
      .raw()
      .toBuffer({ resolveWithObject: true });
    grey = new Uint8Array(scaled.data.buffer, scaled.data.byteOffset, scaled.data.byteLength);
  } else if (cut.width < width || cut.height < height) {
    grey = cropPage(page, cut).grey;
  }
  return { scaled: { grey, width: cut.width, height: cut.height }, factor, cut };
}

/**
 * The region of the page scaled by `factor` (to `scaledWidth` x `scaledHeight`) that holds its
 * `ink` (bounds on the unscaled page), with a margin of two text lines; the whole scaled page
 * when it has no ink.
 */
function inkCut(ink: Region | undefined, factor: number, scaledWidth: number, scaledHeight: number): Region {
  if (ink === undefined) return { left: 0, top: 0, width: scaledWidth, height: scaledHeight };
  const margin = 2 * TARGET_LINE_HEIGHT;
  const left = Math.max(0, Math.floor(ink.left * factor) - margin);
  const top = Math.max(0, Math.floor(ink.top * factor) - margin);
  const right = Math.min(scaledWidth, Math.ceil((ink.left + ink.width) * factor) + margin);
  const bottom = Math.min(scaledHeight, Math.ceil((ink.top + ink.height) * factor) + margin);
  return { left, top, width: right - left, height: bottom - top };
}

/** Without a measurable text line (a blank or a picture): upscale small pages as before. */
function fallbackFactor(width: number, height: number, upscaleBelow: number): number {
  const longest = Math.max(width, height);
  return longest < upscaleBelow ? Math.min(3, upscaleBelow / longest) : 1;
}
