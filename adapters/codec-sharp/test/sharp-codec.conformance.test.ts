import { createSharpCodec } from "@pixport/codec-sharp";
import { describeImageCodecConformance } from "@pixport/testing";

describeImageCodecConformance({ name: "sharp", create: () => createSharpCodec() });
