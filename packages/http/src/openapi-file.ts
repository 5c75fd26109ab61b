import { createOpenApiDocument } from "./openapi.js";
import { defaultRoutes } from "./routes/default-routes.js";

/**
 * The exact text of the committed `openapi.json`: the default table's document without `servers`
 * (each deployment serves its own at `GET /v1/openapi.json`), two-space JSON, final newline.
 */
export function renderOpenApiFile(): string {
  return `${JSON.stringify(createOpenApiDocument(defaultRoutes), null, 2)}\n`;
}
