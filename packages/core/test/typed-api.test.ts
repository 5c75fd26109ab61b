import { describe, expectTypeOf, it } from "vitest";
import type { Classification, Image, ImagePipeline, OperationId, OperationInput } from "../src/index.js";
import type { ImageIdInput } from "../src/operations/manage-images.js";
import type { OperationMethods } from "../src/pipeline.js";
import type { ModulateInput, ResizeInput, TransformBodyInput, TransformStepInput } from "../src/schemas.js";

// Type-level tests: tsc (the `typecheck` step of the test command) checks every line below, and
// each `@ts-expect-error` fails the build if the line after it ever compiles. The runtime
// assertions are vitest's `expectTypeOf`, which are also checked by tsc.

declare const pipeline: ImagePipeline;
declare const caller: Parameters<ImagePipeline["resizeImage"]>[0];
const imageId = "image_x";

describe("typed library calls", () => {
  it("resize: fields and literal unions come from the zod schema", () => {
    // Every field of resize is optional in its type (the one-of-width-or-height rule is checked at
    // run time), so its body may be left out in the type as well.
    expectTypeOf<OperationInput<"resizeImage">["body"]>().toEqualTypeOf<ResizeInput | undefined>();
    expectTypeOf<ImagePipeline["resizeImage"]>().returns.resolves.toEqualTypeOf<Image>();
    const ok = () =>
      pipeline.resizeImage(caller, { imageId, body: { width: 800, fit: "cover", position: "top-left" } });
    expectTypeOf<ReturnType<typeof ok>>().resolves.toEqualTypeOf<Image>();
    // @ts-expect-error a misspelt field is a compile error
    void (() => pipeline.resizeImage(caller, { imageId, body: { widht: 800 } }));
    // @ts-expect-error a wrong type is a compile error
    void (() => pipeline.resizeImage(caller, { imageId, body: { width: "800" } }));
    // @ts-expect-error fit is a union of literals
    void (() => pipeline.resizeImage(caller, { imageId, body: { width: 800, fit: "stretch" } }));
    // @ts-expect-error the body of crop is required (x1, y1, x2, y2 are)
    void (() => pipeline.cropImage(caller, { imageId }));
    // @ts-expect-error the image id is a string
    void (() => pipeline.resizeImage(caller, { imageId: 3, body: { width: 800 } }));
  });

  it("modulate: every adjustment is an optional number; hue too", () => {
    expectTypeOf<ModulateInput["brightness"]>().toEqualTypeOf<number | undefined>();
    void (() => pipeline.modulateImage(caller, { imageId, body: { brightness: 10, hue: 120 } }));
    // @ts-expect-error a misspelt adjustment is a compile error
    void (() => pipeline.modulateImage(caller, { imageId, body: { brightnes: 10 } }));
    // @ts-expect-error strings are not numbers
    void (() => pipeline.modulateImage(caller, { imageId, body: { saturation: "10" } }));
  });

  it("transform: steps are a union discriminated by op, each with its operation's fields", () => {
    expectTypeOf<TransformBodyInput["steps"][number]>().toEqualTypeOf<TransformStepInput>();
    void (() =>
      pipeline.transformImage(caller, {
        imageId,
        body: {
          name: "thumb",
          steps: [
            { op: "resize", width: 800 },
            { op: "rotate", angle: 90 },
            { op: "convert", format: "webp", quality: 80 },
          ],
        },
      }));
    // @ts-expect-error an unknown op is a compile error
    void (() => pipeline.transformImage(caller, { imageId, body: { steps: [{ op: "sharpen", sigma: 2 }] } }));
    void (() =>
      // @ts-expect-error a field of another operation is a compile error
      pipeline.transformImage(caller, { imageId, body: { steps: [{ op: "rotate", width: 800 }] } }));
    // @ts-expect-error steps are required
    void (() => pipeline.transformImage(caller, { imageId, body: { name: "x" } }));
  });

  it("every operation takes its typed input: bodies that may be absent are optional", () => {
    expectTypeOf<OperationInput<"getImage">>().toEqualTypeOf<ImageIdInput>();
    void (() => pipeline.removeImageBackground(caller, { imageId }));
    void (() => pipeline.classifyImage(caller, { imageId }));
    expectTypeOf<ImagePipeline["classifyImage"]>().returns.resolves.toEqualTypeOf<Classification>();
    void (() => pipeline.extractFormattedText(caller, { imageId, body: { format: "markdown" } }));
    // @ts-expect-error extract-formatted-text needs its format
    void (() => pipeline.extractFormattedText(caller, { imageId }));
    void (() => pipeline.imagineImage(caller, { body: { name: "cat", prompt: "a cat", model: "flux" } }));
    // @ts-expect-error not a model of imagine
    void (() => pipeline.imagineImage(caller, { body: { name: "cat", prompt: "a cat", model: "dall-e" } }));
    void (() => pipeline.listImages(caller, { take: 20 }));
    void (() => pipeline.uploadImage(caller, { name: "x", image: new Uint8Array() }));
    // @ts-expect-error an upload's name is a string
    void (() => pipeline.uploadImage(caller, { name: undefined, image: new Uint8Array() }));
  });

  it("operation ids come from one table, and each is a method of the pipeline", () => {
    expectTypeOf<"transformImage">().toExtend<OperationId>();
    // @ts-expect-error not an operation
    expectTypeOf<"resizeImages">().toExtend<OperationId>();
    expectTypeOf<
      keyof OperationMethods | "deliverVariant" | "deliverOriginVariant"
    >().toEqualTypeOf<OperationId>();
    expectTypeOf<ImagePipeline>().toExtend<OperationMethods>();
  });
});
