export { createJimpCodec } from "./create-jimp-codec.js";
export { type JimpImageCodecOptions, jimpImageCodecOptionsSchema } from "./options.js";
