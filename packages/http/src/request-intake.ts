import {
  type Caller,
  ErrorCodes,
  type ImagePipeline,
  ImagePipelineError,
  RateLimitedError,
} from "@pixport/core";
import { formatBytes } from "@pixport/core/adapter-kit";
import { discardBody, readJsonBody } from "./body.js";
import type { HandlerSettings } from "./handler-options.js";
import type { RequestState } from "./handler-response.js";
import { parseMultipartUpload } from "./multipart.js";
import type { Route, RouteContext } from "./routes/route.js";
import { type HttpRequest, headerValue } from "./types.js";
import type { UploadAdmission, UploadSlot } from "./upload-admission.js";

/**
 * Authenticates the request (routes with `auth: false`, the OpenAPI document, never look at the
 * key), gives an upload its slot (or refuses it when the node has no room), then counts the
 * request against the key's per-minute limit. Returns the caller, `undefined` on routes without authentication.
 */
export async function admitRequest(
  pipeline: ImagePipeline,
  request: HttpRequest,
  route: Route,
  uploads: UploadAdmission,
  state: RequestState,
  releaseWork: () => void,
): Promise<Caller | undefined> {
  const authenticated = route.auth
    ? await pipeline.authenticate(headerValue(request, "x-api-key"))
    : undefined;
  state.who = authenticated;
  // A node that refuses the work refuses before the rate limit counts the request: a 503 does
  // not use up the key's budget (uploads in progress here, image jobs in the core's gate).
  // An upload that waits for a slot gives its work place back first: waiting uploads must not
  // fill the work queue that other tenants' image jobs need.
  if (route.body === "multipart") {
    state.upload = await uploads.admit(authenticated?.accountId, request.signal, releaseWork);
  }
  // Every authenticated request counts against the key's per-minute limit (contract 3, P12).
  if (authenticated !== undefined) {
    try {
      // The work gate was asked before the look-up (`holdWork`), so only the limit is counted here.
      state.rateLimit = await pipeline.admit(authenticated);
    } catch (error) {
      // A refused request still reports the window (the decision travels on the error).
      if (RateLimitedError.isInstance(error)) state.rateLimit = error.decision;
      throw error;
    }
  }
  return authenticated;
}

/** Reads the body the route declares into the context (JSON, a multipart upload) or drains it. */
export async function readRequestBody(
  route: Route,
  context: RouteContext,
  pipeline: ImagePipeline,
  settings: HandlerSettings,
  upload: UploadSlot | undefined,
): Promise<void> {
  const { request } = context;
  if (route.body === "json") {
    context.body = await readJsonBody(request, settings.maxJsonBytes);
  } else if (route.body === "multipart") {
    const maxFileBytes = pipeline.limits.maxUploadBytes;
    const declared = Number(headerValue(request, "content-length") ?? Number.NaN);
    if (declared > maxFileBytes + settings.multipartOverheadBytes) {
      throw new ImagePipelineError(ErrorCodes.IMAGE_TOO_LARGE, "upload too large", {
        issues: [{ path: "image", message: `must not be larger than ${formatBytes(maxFileBytes)}` }],
      });
    }
    context.multipart = await parseMultipartUpload(request, {
      maxFileBytes,
      minBytesPerSecond: settings.minUploadBytesPerSecond,
      graceMs: settings.uploadGraceMs,
      ...(upload === undefined ? {} : { abort: upload.signal, onBytes: upload.received }),
    });
    upload?.bodyRead();
  } else {
    await discardBody(request.body);
  }
}
