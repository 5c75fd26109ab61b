import { createJimpCodec } from "@pixport/codec-jimp";
import { describeImageCodecConformance } from "@pixport/testing";

describeImageCodecConformance({ name: "jimp", create: () => createJimpCodec() });
