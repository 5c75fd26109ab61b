export { createThumbhashPlaceholders } from "./create-thumbhash-placeholders.js";
