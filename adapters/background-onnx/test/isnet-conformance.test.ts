import { describeBackgroundRemoverConformance } from "@pixport/testing";
import { describe, it } from "vitest";
import { imglyIsnetMissing, imglyIsnetModelPath } from "../scripts/imgly-isnet.mjs";
import { createOnnxBackgroundRemover, type OnnxBackgroundRemover } from "../src/index.js";

// The shared BackgroundRemover suite on a real model: IS-Net (fp16 weights) reassembled from the
// test-only, AGPL-licensed @imgly/background-removal-data package (a benchmark peer, bench/peers).
const missing = imglyIsnetMissing();
if (missing !== undefined) {
  describe.skip(`onnx (IS-Net) conformance (skipped: ${missing})`, () => {
    it("runs the BackgroundRemover suite on IS-Net", () => {});
  });
} else {
  describeBackgroundRemoverConformance({
    name: "onnx (IS-Net)",
    create: () => createOnnxBackgroundRemover({ model: imglyIsnetModelPath("medium"), family: "isnet" }),
    cleanup: (remover) => (remover as OnnxBackgroundRemover).close(),
    minMeanIoU: 0.95,
  });
}
