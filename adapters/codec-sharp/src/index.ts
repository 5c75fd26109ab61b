export { createSharpCodec, type SharpImageCodec } from "./create-sharp-codec.js";
export { type SharpImageCodecOptions, sharpImageCodecOptionsSchema } from "./options.js";
