import { ErrorCodes, ImagePipelineError, isImagePipelineError, type Logger } from "@pixport/core";
import { errorBodyResponse, errorResponse, statusOnlyBody } from "./error-status.js";
import type { HttpRequest, HttpResponse } from "./types.js";

/**
 * The error funnel of the handler: whatever a request threw becomes the contract's answer, and
 * what operators need goes to the logger. A closed request gets 499; pixport errors their status
 * (storage outages logged as warnings, internal and configuration errors as errors); anything else
 * is a generic 500 whose cause is logged, never sent. `errorCode` is for the access log.
 */
export function errorAnswer(
  error: unknown,
  request: HttpRequest,
  requestId: string,
  logger: Logger,
): { response: HttpResponse; errorCode: string | undefined } {
  if (request.signal?.aborted === true) {
    // The client is gone: whatever failed failed because of that, and no one reads the answer.
    // 499 (nginx's "client closed request") keeps it apart from real failures in access logs.
    logger.info?.("client closed the request", { method: request.method, path: request.path });
    return {
      response: errorBodyResponse(statusOnlyBody(499, "Client Closed Request")),
      errorCode: undefined,
    };
  }
  const where = { requestId, method: request.method, path: request.path };
  if (isImagePipelineError(error)) {
    if (error.code === ErrorCodes.STORAGE_UNAVAILABLE) {
      logger.warn?.("storage unavailable", { ...where, error: describe(error) });
    }
    if (error.code === ErrorCodes.INTERNAL || error.code === ErrorCodes.INVALID_CONFIGURATION) {
      logger.error?.("request failed", { ...where, error: describe(error) });
    }
    return { response: errorResponse(error), errorCode: error.code };
  }
  logger.error?.("unexpected error", { ...where, error: describe(error) });
  return {
    response: errorResponse(new ImagePipelineError(ErrorCodes.INTERNAL, "internal error", { cause: error })),
    errorCode: ErrorCodes.INTERNAL,
  };
}

/** An error with its stack and its cause's, for the logger. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (cause: ${error.cause.stack ?? error.cause.message})` : "";
    return `${error.stack ?? error.message}${cause}`;
  }
  return String(error);
}
