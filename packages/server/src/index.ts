export { activeAllocator } from "./allocator.js";
export {
  createConsoleLogger,
  type PixportServer,
  type StartPixportServerOptions,
  startPixportServer,
} from "./app.js";
export {
  type LoadConfigOptions,
  loadServerConfig,
  resolveServerConfig,
  type ServerConfig,
  type ServerConfigInput,
  serverConfigSchema,
} from "./config.js";
export { type CreatedKey, createApiKey, ensureInitialKeys, type InitialKeys } from "./keys.js";
export { createPixportRuntime, dataPaths, type PixportRuntime, type RuntimeOptions } from "./runtime.js";
