export { discardBody, mediaType, readBody, readJsonBody } from "./body.js";
export { createImageFromUrlSchema } from "./create-from-url.js";
export {
  ERROR_STATUS,
  ERROR_TYPE_BASE,
  type ErrorBodyOptions,
  errorBody,
  errorBodyResponse,
  errorResponse,
  jsonResponse,
  type MessageErrorBody,
  statusOnlyBody,
  type ValidationErrorBody,
  validationErrorBody,
} from "./error-status.js";
export type { RequestEvent } from "./handler.js";
export {
  createHttpHandler,
  type HttpHandler,
  type HttpHandlerOptions,
  httpHandlerOptionsSchema,
} from "./handler.js";
export { type MultipartLimits, type MultipartUpload, parseMultipartUpload } from "./multipart.js";
export { createNodeListener, type NodeListenerOptions } from "./node.js";
export {
  createOpenApiDocument,
  OPENAPI_API_VERSION,
  type OpenApiDocument,
  type OpenApiDocumentOptions,
} from "./openapi.js";
export {
  imageListSchema,
  imageSchema,
  messageErrorSchema,
  openApiDocumentSchema,
  uploadImageFormSchema,
  validationErrorSchema,
} from "./response-schemas.js";
export { defaultRoutes } from "./routes/default-routes.js";
export { imageRoutes } from "./routes/images.js";
export { openApiRoute } from "./routes/openapi.js";
export type { BodyKind, Route, RouteContext, RouteResult } from "./routes/route.js";
export {
  type ClosableResponse,
  clientGoneSignal,
  type HttpRequest,
  type HttpResponse,
  headerValue,
} from "./types.js";
