export { createConsoleLogger, dataPaths, type PixportServer, startPixportServer } from "./app.js";
export {
  type LoadConfigOptions,
  loadServerConfig,
  resolveServerConfig,
  type ServerConfig,
  type ServerConfigInput,
  serverConfigSchema,
} from "./config.js";
export { type CreatedKey, createApiKey, ensureInitialKey } from "./keys.js";
