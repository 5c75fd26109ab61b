import { describeBackgroundRemoverConformance } from "@pixport/testing";
import { createSharpBackgroundRemover } from "../src/index.js";

describeBackgroundRemoverConformance({
  name: "sharp-classical",
  create: () => createSharpBackgroundRemover(),
});
