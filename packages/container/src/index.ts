// tsyringe throws at import time without a Reflect metadata polyfill, even though pixport uses no
// decorators; this import must come first (and is why the package declares side effects).
import "reflect-metadata";

/**
 * tsyringe's root container and its type, re-exported so that importing them from here loads the
 * Reflect polyfill first (importing `tsyringe` before this package throws).
 */
export { container, type DependencyContainer } from "tsyringe";
export {
  backgroundRemovalConfigSchema,
  deliveryConfigSchema,
  ocrConfigSchema,
  type PixportContainerConfig,
  parsePixportContainerConfig,
  pixportContainerConfigSchema,
  type ResolvedPixportContainerConfig,
  s3ConfigSchema,
} from "./config.js";
export { type PixportDataPaths, pixportDataPaths } from "./data-paths.js";
export type { PixportLifecycle } from "./lifecycle.js";
export { type RegisterPixportOptions, registerPixport } from "./register.js";
export { provide, resolve } from "./resolve.js";
export { type Token, Tokens, type TokenType } from "./tokens.js";
