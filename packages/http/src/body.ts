import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { formatBytes } from "@pixport/core/adapter-kit";
import { type HttpRequest, headerValue } from "./types.js";

const badRequest = (message: string) => new ImagePipelineError(ErrorCodes.BAD_REQUEST, message);

/**
 * Reads a whole body into memory, refusing more than `limit` bytes while streaming (the declared
 * `Content-Length` is checked first but never trusted).
 */
export async function readBody(
  body: HttpRequest["body"],
  limit: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  if (body instanceof Uint8Array) {
    if (body.byteLength > limit) throw tooLarge();
    return body;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > limit) throw tooLarge();
    chunks.push(chunk);
  }
  const result = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    result.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return result;
}

/** The media type of a request without parameters, lower case; `undefined` when absent. */
export function mediaType(request: Pick<HttpRequest, "headers">): string | undefined {
  const value = headerValue(request, "content-type");
  if (value === undefined) return undefined;
  const type = value.split(";")[0]?.trim().toLowerCase();
  return type === "" ? undefined : type;
}

function declaredLength(request: Pick<HttpRequest, "headers">): number | undefined {
  const value = headerValue(request, "content-length");
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}

/**
 * Reads a JSON request body (contract section 1.1 and P1):
 * - `Content-Type: application/json` (or any `+json`) with an empty body → 400;
 * - JSON that does not parse → 400;
 * - a non-empty body with another content type → 400;
 * - no body at all and no content type → `undefined` (routes whose fields are all optional accept it).
 */
export async function readJsonBody(request: HttpRequest, limit: number): Promise<unknown> {
  const type = mediaType(request);
  const isJson = type === "application/json" || (type?.endsWith("+json") ?? false);
  const length = declaredLength(request);
  const tooLarge = () => badRequest(`The JSON body must not be larger than ${formatBytes(limit)}.`);
  if (length !== undefined && length > limit) throw tooLarge();
  const bytes = await readBody(request.body, limit, tooLarge);
  if (bytes.byteLength === 0) {
    if (isJson) throw badRequest("The request declares a JSON body but the body is empty; send {} instead.");
    return undefined;
  }
  if (!isJson) {
    throw badRequest(`Expected Content-Type application/json for this request, received ${type ?? "none"}.`);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest("The JSON body is not valid UTF-8.");
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`The JSON body could not be parsed: ${(error as Error).message}`);
  }
}

/** Drains and discards a body so keep-alive connections stay usable; bounded by `limit` bytes. */
export async function discardBody(body: HttpRequest["body"], limit = 64 * 1024): Promise<void> {
  if (body === null || body instanceof Uint8Array) return;
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > limit) return;
  }
}
