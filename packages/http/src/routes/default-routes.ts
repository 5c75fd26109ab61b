import { imageRoutes } from "./images.js";
import { openApiRoute } from "./openapi.js";
import type { Route } from "./route.js";

/**
 * The table {@link createHttpHandler} serves by default: every image route and
 * `GET /v1/openapi.json`. Bindings that register native routes loop over it.
 */
export const defaultRoutes: readonly Route[] = [...imageRoutes, openApiRoute];
