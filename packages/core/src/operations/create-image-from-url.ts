import type { z } from "zod";
import { ErrorCodes, isImagePipelineError, type ValidationIssue, validationError } from "../errors.js";
import type { Image } from "../image.js";
import type { UrlImportSource } from "../policies/url-import-policy.js";
import { createImageFromUrlSchema, formatIssues } from "../schemas.js";
import type { Caller, PipelineContext } from "./context.js";
import { ingestImage } from "./upload-image.js";

/** Input of {@link createImageFromUrl}: the JSON body `{name, url}`. */
export interface CreateImageFromUrlInput {
  body: z.input<typeof createImageFromUrlSchema>;
}

/** {@link CreateImageFromUrlInput} once validated: the name and where the bytes come from. */
export interface ParsedImageFromUrl {
  name: string;
  source: UrlImportSource;
}

const FETCH_CODES = new Set<string>([
  ErrorCodes.URL_NOT_ALLOWED,
  ErrorCodes.SOURCE_UNREACHABLE,
  ErrorCodes.SOURCE_TIMEOUT,
  ErrorCodes.SOURCE_NOT_ACCESSIBLE,
  ErrorCodes.SOURCE_ERROR,
  ErrorCodes.IMAGE_TOO_LARGE,
  ErrorCodes.INVALID_IMAGE,
]);

async function readStorage(context: PipelineContext, keys: readonly string[]): Promise<Uint8Array> {
  const store = context.urlImport.publicStore;
  if (store === undefined) {
    throw validationError(
      [{ path: "url", message: "cannot be read: this server has no public storage to import from" }],
      ErrorCodes.URL_NOT_ALLOWED,
    );
  }
  for (const key of keys) {
    const data = await store.get(key);
    if (data !== null) return data;
  }
  throw validationError(
    [
      {
        path: "url",
        message: "must point to a published image of this service (nothing is published there)",
      },
    ],
    ErrorCodes.SOURCE_NOT_ACCESSIBLE,
  );
}

async function fetchRemote(
  context: PipelineContext,
  source: Extract<UrlImportSource, { kind: "remote" }>,
): Promise<Uint8Array> {
  const { fetcher, policy } = context.urlImport;
  if (fetcher === undefined) {
    throw validationError(
      [{ path: "url", message: "cannot be imported: this server has no URL fetcher configured" }],
      ErrorCodes.URL_NOT_ALLOWED,
    );
  }
  const options = policy.options;
  try {
    const fetched = await fetcher.fetch({
      url: source.url,
      checkRedirect: (location, from) => policy.checkRedirect(source, location, from),
      maxRedirects: options.maxRedirects,
      maxBytes: context.limits.maxUploadBytes,
      connectTimeoutMs: options.connectTimeoutMs,
      timeoutMs: options.timeoutMs,
    });
    return fetched.data;
  } catch (error) {
    if (isImagePipelineError(error) && FETCH_CODES.has(error.code)) {
      context.logger.info?.("URL import refused", {
        code: error.code,
        host: new URL(source.url).hostname,
        cause: error.cause === undefined ? undefined : String(error.cause),
      });
      throw validationError([{ path: "url", message: error.message }], error.code);
    }
    // Anything else (a fetcher bug, an unexpected runtime error) is still the source's failure for
    // the client: a 422 on `url`, never a 500. The cause goes to the log only.
    context.logger.warn?.("URL import failed unexpectedly", { error: String(error) });
    throw validationError(
      [{ path: "url", message: "could not be fetched (the source failed)" }],
      ErrorCodes.SOURCE_ERROR,
    );
  }
}

/**
 * Validates `{name, url}`: the fields, then the URL against the origin policy (https, default
 * port, no credentials, allow-listed host, share links rewritten to downloads). One 422 lists every
 * failing field; a refused URL carries the policy's code.
 */
export function parseCreateImageFromUrl(
  input: CreateImageFromUrlInput,
  context: Pick<PipelineContext, "urlImport">,
): ParsedImageFromUrl {
  const body: unknown = input?.body === undefined ? {} : input.body;
  const parsed = createImageFromUrlSchema.safeParse(body);
  const issues: ValidationIssue[] = parsed.success ? [] : formatIssues(parsed.error.issues);
  const url = (body as { url?: unknown } | null)?.url;
  let source: UrlImportSource | undefined;
  let code: string = ErrorCodes.VALIDATION_FAILED;
  if (!issues.some((issue) => issue.path === "url" || issue.path === "body") && typeof url === "string") {
    if (!context.urlImport.policy.options.enabled) {
      issues.push({
        path: "url",
        message: "cannot be imported: creating images from URLs is not enabled on this server",
      });
      code = ErrorCodes.URL_NOT_ALLOWED;
    } else {
      const decision = context.urlImport.policy.resolve(url);
      if (decision.ok) source = decision.source;
      else {
        issues.push({ path: "url", message: decision.message });
        code = decision.code;
      }
    }
  }
  if (issues.length > 0 || !parsed.success || source === undefined) {
    throw validationError(issues, code as (typeof ErrorCodes)[keyof typeof ErrorCodes]);
  }
  return { name: parsed.data.name, source };
}

/**
 * `POST /v1/images` with JSON `{name, url}`: creates an image from a URL on an allowed origin.
 *
 * URLs on the service's own public storage are read from the public store without a network
 * request; all others are fetched by the `ImageFetcher`. The bytes then go through exactly the
 * upload path (sniffing, limits, re-encode), with problems reported on `url`. Every failure is a
 * 422 with an `errors` entry on `url` saying which problem it is.
 */
export async function createImageFromUrl(
  context: PipelineContext,
  caller: Caller,
  input: ParsedImageFromUrl,
): Promise<Image> {
  const { source } = input;
  const data =
    source.kind === "storage" ? await readStorage(context, source.keys) : await fetchRemote(context, source);
  return ingestImage(context, caller, { name: input.name, image: data }, "url");
}
