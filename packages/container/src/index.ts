// tsyringe throws at import time without a Reflect metadata polyfill, even though pixport uses no
// decorators; this import must come first (and is why the package declares side effects).
import "reflect-metadata";

/**
 * tsyringe's root container and its type, re-exported so that importing them from here loads the
 * Reflect polyfill first (importing `tsyringe` before this package throws).
 */
export { container, type DependencyContainer } from "tsyringe";
export {
  type PixportContainerConfig,
  pixportContainerConfigSchema,
  pixportDataPaths,
  provide,
  registerPixport,
  resolve,
} from "./register.js";
export { type Token, Tokens, type TokenType } from "./tokens.js";
