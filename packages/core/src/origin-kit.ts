import { ErrorCodes, ImagePipelineError } from "./errors.js";
import { formatBytes } from "./limits.js";

/*
 * What the origin sources (http, s3, fs) share: their refusals, worded for clients, and the
 * freshness an origin declares.
 */

/** An original over the byte limit, read or declared (422 naming `path`, as an upload would be). */
export function originTooLarge(maxBytes: number): ImagePipelineError {
  const message = `must name an image no larger than ${formatBytes(maxBytes)}`;
  return new ImagePipelineError(ErrorCodes.IMAGE_TOO_LARGE, `path ${message}`, {
    issues: [{ path: "path", message }],
  });
}

/** An origin's object whose bytes are not an image pixport reads (the core answers 502). */
export function originNotImage(): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.INVALID_IMAGE,
    "The origin's object is not an image pixport reads.",
  );
}

/** An origin failure with a client-safe message; the details stay in `cause` for the log. */
export function originError(message: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.ORIGIN_ERROR, message, cause === undefined ? {} : { cause });
}

/**
 * Seconds an origin's `Cache-Control` keeps an object fresh: `s-maxage` over `max-age` (pixport is
 * a shared cache), 0 for `no-cache`/`no-store`/`private`, `undefined` without any of them.
 */
export function cacheControlMaxAge(header: string | null | undefined): number | undefined {
  if (header === null || header === undefined) return undefined;
  const directives = new Map<string, string>();
  for (const part of header.split(",")) {
    const [name = "", value = ""] = part.trim().split("=", 2);
    directives.set(name.trim().toLowerCase(), value.trim().replace(/^"|"$/g, ""));
  }
  if (directives.has("no-store") || directives.has("no-cache") || directives.has("private")) return 0;
  const value = directives.get("s-maxage") ?? directives.get("max-age");
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return Math.min(Number(value), 31_536_000);
}
