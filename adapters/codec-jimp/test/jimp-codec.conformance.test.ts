import { createJimpCodec } from "@pixport/codec-jimp";
import { describeImageCodecConformance } from "@pixport/testing";

// Both ways of running jimp: in worker threads (the default) and on the calling thread.
describeImageCodecConformance({ name: "jimp", create: () => createJimpCodec() });
describeImageCodecConformance({ name: "jimp (workers: 0)", create: () => createJimpCodec({ workers: 0 }) });
