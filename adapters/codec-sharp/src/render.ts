import type { EncodedImage, TransformRequest } from "@pixport/core";
import type { OutputOptions, Size } from "@pixport/core/adapter-kit";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { encode } from "./encode.js";
import { compilePasses, type Pass } from "./passes.js";

/** What {@link render} leaves: the encoded image (last pass fused with the encoder), or a raw source. */
export type Rendered = EncodedImage | { source: () => Sharp; size: Size };

/**
 * Runs the passes over `source`. Passes are chained through raw pixels; when `output` is given and
 * it is safe, the last pass is fused with the encoder and the encoded image is returned.
 */
export async function render(
  first: () => Sharp,
  start: Size,
  startOpaque: boolean,
  passes: readonly Pass[],
  bounded: (image: Sharp) => Sharp,
  output: OutputOptions | undefined,
): Promise<Rendered> {
  let source = first;
  let size = start;
  let opaque = startOpaque;
  for (const [index, pass] of passes.entries()) {
    const operations = await pass.plan(size);
    if (operations === null) continue;
    const image = operations(source());
    const last = index === passes.length - 1;
    // Fusing the last pass with the encoder saves a raw round trip. For jpeg that is only right
    // when nothing can turn transparent after sharp's (early) flatten.
    if (
      output !== undefined &&
      last &&
      !pass.materialise &&
      (output.format !== "jpeg" || (opaque && pass.keepsOpaque))
    ) {
      return await encode(bounded(image), output);
    }
    const { data, info } = await bounded(image.raw({ depth: "uchar" })).toBuffer({ resolveWithObject: true });
    const raw = { width: info.width, height: info.height, channels: info.channels };
    source = () => sharp(data, { raw, limitInputPixels: false });
    size = { width: info.width, height: info.height };
    opaque = info.channels === 1 || info.channels === 3;
  }
  return { source, size };
}

/**
 * An animation kept as one: every frame is decoded once (one strip), runs the same passes on its
 * own (so rotations, crops and overlays land the same on every frame), and the frames are joined
 * again with their delays and loop count.
 */
export async function transformAnimation(
  input: Buffer,
  metadata: Metadata,
  frames: number,
  request: TransformRequest,
  decodeOptions: SharpOptions,
  bounded: (image: Sharp) => Sharp,
): Promise<EncodedImage> {
  const strip = await bounded(
    sharp(input, { ...decodeOptions, pages: -1 })
      .ensureAlpha()
      .raw({ depth: "uchar" }),
  ).toBuffer({
    resolveWithObject: true,
  });
  const width = strip.info.width;
  const frameHeight = metadata.pageHeight ?? Math.floor(strip.info.height / frames);
  const count = Math.floor(strip.info.height / frameHeight);
  const frameBytes = width * frameHeight * 4;
  const start = { width, height: frameHeight };
  const passes = compilePasses(request.steps, start, decodeOptions);
  const outputs: Buffer[] = [];
  let size: Size = start;
  for (let index = 0; index < count; index += 1) {
    const pixels = strip.data.subarray(index * frameBytes, (index + 1) * frameBytes);
    const raw = { width, height: frameHeight, channels: 4 as const };
    const rendered = await render(
      () => sharp(pixels, { raw, limitInputPixels: false }),
      start,
      false,
      passes,
      bounded,
      undefined,
    );
    if ("format" in rendered) throw new Error("unreachable: frames are never encoded one by one");
    const frame = await bounded(rendered.source().ensureAlpha().raw({ depth: "uchar" })).toBuffer({
      resolveWithObject: true,
    });
    if (index > 0 && (frame.info.width !== size.width || frame.info.height !== size.height)) {
      throw new Error("Frames of one animation came out in different sizes.");
    }
    size = { width: frame.info.width, height: frame.info.height };
    outputs.push(frame.data);
  }
  const joined = sharp(Buffer.concat(outputs), {
    raw: { width: size.width, height: size.height * count, channels: 4, pageHeight: size.height },
    limitInputPixels: false,
  });
  const delay = metadata.delay?.slice(0, count);
  const animation = {
    loop: metadata.loop ?? 0,
    ...(delay === undefined || delay.length === 0 ? {} : { delay }),
  };
  const encoded = await encode(bounded(joined), request.output, animation);
  return { ...encoded, height: size.height, frames: count };
}
