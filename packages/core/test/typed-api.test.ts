import { describe, expectTypeOf, it } from "vitest";
import type {
  Image,
  ImagePipeline,
  ModulateInput,
  OperationId,
  ResizeInput,
  TransformBodyInput,
  TransformStepInput,
} from "../src/index.js";

// Type-level tests: tsc (the `typecheck` step of the test command) checks every line below, and
// each `@ts-expect-error` fails the build if the line after it ever compiles. The runtime
// assertions are vitest's `expectTypeOf`, which are also checked by tsc.

declare const pipeline: ImagePipeline;
declare const caller: Parameters<ImagePipeline["resize"]>[0];

describe("typed library calls", () => {
  it("resize: fields and literal unions come from the zod schema", () => {
    expectTypeOf<ImagePipeline["resize"]>().parameter(2).toEqualTypeOf<ResizeInput>();
    expectTypeOf<ImagePipeline["resize"]>().returns.resolves.toEqualTypeOf<Image>();
    const ok = () => pipeline.resize(caller, "image_x", { width: 800, fit: "cover", position: "top-left" });
    expectTypeOf<ReturnType<typeof ok>>().resolves.toEqualTypeOf<Image>();
    // @ts-expect-error a misspelt field is a compile error
    void (() => pipeline.resize(caller, "image_x", { widht: 800 }));
    // @ts-expect-error a wrong type is a compile error
    void (() => pipeline.resize(caller, "image_x", { width: "800" }));
    // @ts-expect-error fit is a union of literals
    void (() => pipeline.resize(caller, "image_x", { width: 800, fit: "stretch" }));
  });

  it("modulate: every adjustment is an optional number; hue too", () => {
    expectTypeOf<ModulateInput["brightness"]>().toEqualTypeOf<number | undefined>();
    void (() => pipeline.modulate(caller, "image_x", { brightness: 10, hue: 120 }));
    // @ts-expect-error a misspelt adjustment is a compile error
    void (() => pipeline.modulate(caller, "image_x", { brightnes: 10 }));
    // @ts-expect-error strings are not numbers
    void (() => pipeline.modulate(caller, "image_x", { saturation: "10" }));
  });

  it("transform: steps are a union discriminated by op, each with its operation's fields", () => {
    expectTypeOf<TransformBodyInput["steps"][number]>().toEqualTypeOf<TransformStepInput>();
    void (() =>
      pipeline.transform(caller, "image_x", {
        name: "thumb",
        steps: [
          { op: "resize", width: 800 },
          { op: "rotate", angle: 90 },
          { op: "convert", format: "webp", quality: 80 },
        ],
      }));
    // @ts-expect-error an unknown op is a compile error
    void (() => pipeline.transform(caller, "image_x", { steps: [{ op: "sharpen", sigma: 2 }] }));
    // @ts-expect-error a field of another operation is a compile error
    void (() => pipeline.transform(caller, "image_x", { steps: [{ op: "rotate", width: 800 }] }));
    // @ts-expect-error steps are required
    void (() => pipeline.transform(caller, "image_x", { name: "x" }));
  });

  it("operation ids come from one table", () => {
    expectTypeOf<"transformImage">().toExtend<OperationId>();
    // @ts-expect-error not an operation
    expectTypeOf<"resizeImages">().toExtend<OperationId>();
  });
});
