export { createJimpCodec, type JimpCodec } from "./create-jimp-codec.js";
export { type JimpImageCodecOptions, jimpImageCodecOptionsSchema } from "./options.js";
