import {
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  type ErrorCode,
  ErrorCodes,
  type ImageCodec,
  ImagePipelineError,
  RateLimitedError,
} from "@pixport/core";
import { validationError } from "@pixport/core/internal";
import { describe, expect, it } from "vitest";
import {
  createHttpHandler,
  ERROR_STATUS,
  errorBody,
  errorResponse,
  type HttpRequest,
  type HttpResponse,
  statusOnlyBody,
  validationErrorBody,
} from "../src/index.js";

// Every error body pixport writes comes from one builder; these pin its output byte for byte to
// the contract's shapes (section 2.1: `type`, `error`, `status`, then `message` or `errors`; the
// error `code` as an extra field after them) and to what the handler answered before.

const codec: ImageCodec = {
  name: "fake",
  capabilities: { inputFormats: ["png"], outputFormats: ["jpeg", "png", "webp"], steps: [] },
  probe: async () => ({ format: "png", width: 1, height: 1 }),
  transform: async () => {
    throw new Error("no transform expected");
  },
};

const text = (response: HttpResponse) => new TextDecoder().decode(response.body ?? new Uint8Array());

function request(method: string, path: string, extra: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method,
    path,
    query: new URLSearchParams(),
    headers: {},
    body: null,
    baseUrl: "https://api.test",
    ...extra,
  };
}

describe("the error body builder", () => {
  it("builds the contract's message and validation bodies, fields in the contract's order", () => {
    expect(
      JSON.stringify(errorBody({ status: 404, message: "Image with id image_exampleid not found." })),
    ).toBe(
      '{"type":"https://docs.img-processing.com/errors/not-found","error":"Not Found","status":404,"message":"Image with id image_exampleid not found."}',
    );
    expect(JSON.stringify(validationErrorBody(["name is required"], ErrorCodes.VALIDATION_FAILED))).toBe(
      '{"type":"https://docs.img-processing.com/errors/validation-error","error":"Validation Error","status":422,"errors":["name is required"],"code":"VALIDATION_FAILED"}',
    );
    // Every 5xx is `internal-error` / `Internal Error` (contract section 2.2).
    expect(errorBody({ status: 503, message: "later", code: ErrorCodes.OVERLOADED })).toEqual({
      type: "https://docs.img-processing.com/errors/internal-error",
      error: "Internal Error",
      status: 503,
      message: "later",
      code: "OVERLOADED",
    });
    expect(JSON.stringify(statusOnlyBody(499, "Client Closed Request"))).toBe(
      '{"status":499,"error":"Client Closed Request"}',
    );
  });

  it("is what errorResponse answers for pixport errors", () => {
    expect(
      text(errorResponse(new ImagePipelineError(ErrorCodes.IMAGE_NOT_FOUND, "Image with id x not found."))),
    ).toBe(
      '{"type":"https://docs.img-processing.com/errors/not-found","error":"Not Found","status":404,"message":"Image with id x not found.","code":"IMAGE_NOT_FOUND"}',
    );
    expect(text(errorResponse(validationError([{ path: "width", message: "is required" }])))).toBe(
      '{"type":"https://docs.img-processing.com/errors/validation-error","error":"Validation Error","status":422,"errors":["width is required"],"code":"VALIDATION_FAILED"}',
    );
    const outage = errorResponse(
      new ImagePipelineError(ErrorCodes.STORAGE_UNAVAILABLE, "ENOSPC /data/images", {
        cause: new Error("x"),
      }),
    );
    expect(outage.headers["Retry-After"]).toBe("5");
    expect(text(outage)).toBe(
      '{"type":"https://docs.img-processing.com/errors/internal-error","error":"Internal Error","status":503,"message":"Storage is temporarily unavailable; retry later.","code":"STORAGE_UNAVAILABLE"}',
    );
  });

  it("names each cause of a 503 by its own code and message, in the contract's 5xx type and title", () => {
    // The contract gives every 5xx `internal-error` / "Internal Error" (section 2.2): the cause
    // travels in `code` and `message`, with Retry-After, never in a 5xx slug of pixport's own.
    const unavailable = Object.entries(ERROR_STATUS)
      .filter(([, row]) => row.status === 503)
      .map(([code]) => code)
      .sort();
    expect(unavailable).toEqual(
      ["MODEL_UNAVAILABLE", "OCR_AT_CAPACITY", "OVERLOADED", "STARTING", "STORAGE_UNAVAILABLE"].sort(),
    );
    const messages = new Set<string>();
    for (const code of unavailable) {
      const answer = errorResponse(
        new ImagePipelineError(code as ErrorCode, `${code} says why`, { retryAfterSeconds: 2 }),
      );
      const body = JSON.parse(text(answer)) as Record<string, unknown>;
      expect(answer.status, code).toBe(503);
      expect(answer.headers["Retry-After"], code).toBe("2");
      expect(Object.keys(body), code).toEqual(["type", "error", "status", "message", "code"]);
      expect(body, code).toMatchObject({
        type: "https://docs.img-processing.com/errors/internal-error",
        error: "Internal Error",
        status: 503,
        code,
      });
      expect(body.message, code).not.toBe("An internal error occurred while processing the request.");
      messages.add(String(body.message));
    }
    // Storage keeps its adapter's text for the log; the others say what is busy or starting.
    expect(messages.size).toBe(unavailable.length);
  });

  it("answers a wrong method (405) and a closed request (499) with the same bytes as before", async () => {
    const pipeline = createImagePipeline({
      codec,
      blobStore: createMemoryBlobStore(),
      images: createMemoryImageRepository(),
      keys: createMemoryKeyStore(),
    });
    const handler = createHttpHandler(pipeline);
    const wrong = await handler(request("PUT", "/v1/images/image_aaaaaaaaaaaaaaaaaaaaaaaa"));
    expect(wrong.status).toBe(405);
    expect(wrong.headers.Allow).toBe("GET, DELETE");
    expect(text(wrong)).toBe(
      '{"type":"https://docs.img-processing.com/errors/method-not-allowed","error":"Method Not Allowed","status":405,"message":"Method PUT is not allowed on /v1/images/image_aaaaaaaaaaaaaaaaaaaaaaaa."}',
    );
    const closed = await handler(request("GET", "/v1/images", { signal: AbortSignal.abort() }));
    expect(closed.status).toBe(499);
    expect(text(closed)).toBe('{"status":499,"error":"Client Closed Request"}');
  });
});

describe("error classes are recognised by their helpers, not by their shape", () => {
  it("RateLimitedError.isInstance: its own errors and another copy's, never a look-alike", () => {
    const decision = { allowed: false, limit: 10, remaining: 0, resetMs: 1500 };
    expect(RateLimitedError.isInstance(new RateLimitedError(decision))).toBe(true);
    // Another copy of @pixport/core marks its errors with the same registered symbols.
    const copy = Object.assign(new Error("x"), {
      [Symbol.for("pixport.error")]: true,
      [Symbol.for("pixport.error.rate-limited")]: true,
      code: "RATE_LIMITED",
      decision,
    });
    expect(RateLimitedError.isInstance(copy)).toBe(true);
    // A pixport error that merely carries a `decision` field is not one.
    const lookalike = Object.assign(new ImagePipelineError(ErrorCodes.RATE_LIMITED, "x"), { decision });
    expect(RateLimitedError.isInstance(lookalike)).toBe(false);
    expect(RateLimitedError.isInstance({ decision })).toBe(false);
  });
});
