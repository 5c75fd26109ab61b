export { createSharpCodec } from "./create-sharp-codec.js";
export { type SharpImageCodecOptions, sharpImageCodecOptionsSchema } from "./options.js";
