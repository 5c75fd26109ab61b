import {
  type Caller,
  type ImageCodec,
  isImagePipelineError,
  type TransformRequest,
  type VariantSigner,
} from "../src/index.js";
import type { TransformStepType } from "../src/transforms/steps.js";

// A fake image format and codec for the core's tests of limits and budgets (and a recording signer
// for its delivery tests): nothing is decoded, so a test can ask for a 50 MP image in a dozen bytes.

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** A fake PNG: the magic bytes, then width and height as 16-bit numbers. */
export const fake = (width: number, height: number) =>
  new Uint8Array([...PNG, width >> 8, width & 255, height >> 8, height & 255]);

/** The size a {@link fake} PNG declares. */
export const sizeOf = (input: Uint8Array) => ({
  width: (input[8]! << 8) | input[9]!,
  height: (input[10]! << 8) | input[11]!,
});

/**
 * A codec that reads fake PNGs, writes every format, and records each transform it is asked for;
 * `encode` makes a transform's output bytes (by default the input as it is).
 */
export function fakeCodec(
  steps: TransformStepType[],
  encode: (request: TransformRequest) => { data: Uint8Array; width: number; height: number } = (request) => ({
    data: request.input,
    ...sizeOf(request.input),
  }),
) {
  const calls: TransformRequest[] = [];
  const codec: ImageCodec = {
    name: "fake",
    capabilities: {
      inputFormats: ["png"],
      outputFormats: ["png", "jpeg", "webp", "avif", "gif", "tiff"],
      steps,
    },
    probe: async (input) => ({ format: "png", ...sizeOf(input) }),
    transform: async (request) => {
      calls.push(request);
      return { ...encode(request), format: request.output.format };
    },
    sample: async () => ({
      width: 1,
      height: 1,
      data: new Uint8Array([1, 2, 3, 255]),
      hasAlpha: false,
      frames: 1,
    }),
  };
  return { codec, calls };
}

export const live: Caller = { accountId: "a", keyKind: "live", keyId: "k1" };

/** The pipeline error `promise` rejects with (fails the test when it resolves or throws another). */
export async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isImagePipelineError(error)) throw new Error(`expected a pipeline error, got ${String(error)}`);
  return error;
}

/** A signer that accepts every signature and records the paths it was asked to verify. */
export function recordingSigner(): { signer: VariantSigner; verified: string[] } {
  const verified: string[] = [];
  const signer: VariantSigner = {
    sign: async () => "ok",
    verify: async (path) => {
      verified.push(path);
      return true;
    },
  };
  return { signer, verified };
}
