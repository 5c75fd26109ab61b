import { z } from "zod";
import { type ErrorCode, ErrorCodes } from "../errors.js";
import { FILE_EXTENSIONS, formatFromSpelling, IMAGE_FORMATS } from "../image.js";
import { parseOptions } from "../options.js";
import { BLOB_KEY_PATTERN } from "../ports/blob-store.js";
import { hostMatches, hostPatternProblem, normalizeHostName } from "./host-pattern.js";
import { SHARE_LINK_PROVIDERS, type ShareLinkProvider, type ShareLinkProviderName } from "./share-links.js";

/**
 * The contract's origin table (section 5.2) as host patterns. `*` is exactly one DNS label, so:
 * - S3 virtual hosts whose bucket name has dots (`a.b.s3.us-east-1.amazonaws.com`) are refused;
 *   such buckets work path-style on `s3.amazonaws.com/{bucket}/{key}`.
 * - S3 path style is allowed on `s3.amazonaws.com` only (the table's entry); regional path-style
 *   hosts (`s3.us-east-1.amazonaws.com`) are not in the table.
 * - S3 website endpoints (`*.s3-website-*.amazonaws.com`, `*.s3-website.*.amazonaws.com`) never
 *   match and are refused explicitly, because they can redirect anywhere.
 * The service's own storage (`storage.img-processing.com` and the configured public storage base)
 * is not listed here: such URLs are read from the public store, never fetched.
 */
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = [
  "*.s3.*.amazonaws.com",
  "*.s3.amazonaws.com",
  "s3.amazonaws.com",
  "*.blob.core.windows.net",
  "*.r2.dev",
  "www.dropbox.com",
  "storage.googleapis.com",
  "drive.google.com",
  "1drv.ms",
];

/** The original service's public storage, accepted as an alias of the own public storage. */
export const ORIGINAL_STORAGE_BASE_URL = "https://storage.img-processing.com";

const hostPatternSchema = z.string().superRefine((value, context) => {
  const problem = hostPatternProblem(value);
  if (problem !== null) context.addIssue({ code: "custom", message: `host pattern ${problem}` });
});

const baseUrlSchema = z.string().refine((value) => {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === "https:" || url.protocol === "http:") && url.username === "" && url.search === "";
}, "must be an absolute http(s) URL without credentials or query");

/** Options of URL import (`createImageFromUrl`), validated once by `createImagePipeline`. */
export const urlImportOptionsSchema = z.object({
  /** Whether `createImageFromUrl` imports at all; when false every URL is refused. @default true */
  enabled: z.boolean().default(true),
  /** Host patterns of the allowed origins; replaces the default table. @default DEFAULT_ALLOWED_ORIGINS */
  allowedOrigins: z.array(hostPatternSchema).default([...DEFAULT_ALLOWED_ORIGINS]),
  /** Host patterns added to `allowedOrigins` (the usual way to extend the table). @default [] */
  additionalOrigins: z.array(hostPatternSchema).default([]),
  /**
   * Base URLs of the deployment's own public storage (its `publicStorageBaseUrl`). URLs under them
   * are read from the public BlobStore with no network request. @default []
   */
  storageBaseUrls: z.array(baseUrlSchema).default([]),
  /** Also treat `https://storage.img-processing.com` as own storage (the SDK's fixture URL). @default true */
  originalStorageAlias: z.boolean().default(true),
  /** Redirects followed at most (each re-checked against the allow-list). @default 3 */
  maxRedirects: z.number().int().min(0).max(3).default(3),
  /** Time to open the TCP+TLS connection of one hop, ms. @default 5000 */
  connectTimeoutMs: z.number().int().positive().max(60_000).default(5_000),
  /** Time for the whole fetch, all hops and the body, ms (contract P25). @default 30000 */
  timeoutMs: z.number().int().positive().max(300_000).default(30_000),
});

export type UrlImportOptions = z.input<typeof urlImportOptionsSchema>;
export type ResolvedUrlImportOptions = z.output<typeof urlImportOptionsSchema>;

/** Where an accepted URL's bytes come from. */
export type UrlImportSource =
  | {
      /** The service's own public storage: read `keys` (first existing wins) from the public store. */
      kind: "storage";
      keys: readonly string[];
    }
  | {
      /** A network fetch of `url` (normalised; share links already rewritten to downloads). */
      kind: "remote";
      url: string;
      /** The share-link provider whose redirect list applies, or `null` for the allowed origins. */
      provider: ShareLinkProviderName | null;
    };

/** A refused URL: the error code and the problem sentence (shown after the field name). */
export interface UrlRefusal {
  code: ErrorCode;
  message: string;
}

export type UrlImportDecision = { ok: true; source: UrlImportSource } | ({ ok: false } & UrlRefusal);

/** The origin policy of URL import. Pure: no I/O, no runtime built-ins. */
export interface UrlImportPolicy {
  readonly options: ResolvedUrlImportOptions;
  /** Decides what to do with a user-supplied URL. */
  resolve(url: string): UrlImportDecision;
  /**
   * Checks one redirect hop of a remote source: `location` (the raw header) resolved against the
   * URL that answered. Returns the next URL to request or a refusal.
   */
  checkRedirect(
    source: Extract<UrlImportSource, { kind: "remote" }>,
    location: string,
    from: string,
  ): { ok: true; url: string } | ({ ok: false } & UrlRefusal);
}

// Raw control characters and spaces (the URL parser silently strips tabs and newlines), and their
// percent-encoded forms, which have no place in an image URL (header-injection attempts, B36).
const hasControl = (value: string) =>
  [...value].some((character) => character.charCodeAt(0) <= 0x20 || character.charCodeAt(0) === 0x7f);
const ENCODED_CONTROL = /%(?:[01][0-9a-f]|7f)/i;
const S3_WEBSITE = /^s3-website(?:[.-]|$)/;

const refuse = (message: string, code: ErrorCode = ErrorCodes.URL_NOT_ALLOWED) =>
  ({ ok: false, code, message }) as const;
const NOT_ALLOWED = "must be a URL from an allowed origin";

interface StorageBase {
  protocol: string;
  host: string;
  port: string;
  prefix: string;
}

function parseStorageBase(value: string): StorageBase {
  const url = new URL(value);
  const host = normalizeHostName(url.hostname) ?? url.hostname;
  return { protocol: url.protocol, host, port: url.port, prefix: url.pathname.replace(/\/+$/, "") };
}

const IMAGE_KEY = /^(images\/image_[a-z0-9]{24})(?:\.([a-z]+))?$/i;

/** The public-store keys a path under a storage base may name, or `null` when it names none. */
function storageKeys(rest: string): string[] | null {
  let key: string;
  try {
    key = decodeURIComponent(rest);
  } catch {
    return null;
  }
  const image = IMAGE_KEY.exec(key);
  const format = image?.[2] === undefined ? undefined : formatFromSpelling(image[2].toLowerCase());
  if (image !== null && format !== null) {
    // Published copies are `images/{id}.{ext}`; the server also answers `/images/{id}` and every
    // other spelling of a format (`.jpeg`).
    const stem = (image[1] as string).toLowerCase();
    const formats = format === undefined ? IMAGE_FORMATS : [format];
    return formats.map((candidate) => `${stem}.${FILE_EXTENSIONS[candidate]}`);
  }
  if (key.length > 512 || key.includes("//") || !BLOB_KEY_PATTERN.test(key)) return null;
  return [key];
}

function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith("[") || /^[0-9.]+$/.test(hostname.replace(/\.$/, ""));
}

/** Shape checks shared by the first URL and every redirect hop: https, default port, no credentials. */
function checkRemoteShape(url: URL): { host: string } | UrlRefusal {
  if (url.username !== "" || url.password !== "") {
    return {
      code: ErrorCodes.URL_NOT_ALLOWED,
      message: "must not contain credentials (user name or password)",
    };
  }
  if (url.protocol !== "https:") return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must be an https URL" };
  if (url.port !== "") {
    return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must use the default https port (443)" };
  }
  if (isIpLiteral(url.hostname)) {
    return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must use a host name, not an IP address" };
  }
  const host = normalizeHostName(url.hostname);
  if (host === null) return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must have a valid host name" };
  if (host.split(".").some((label) => S3_WEBSITE.test(label))) {
    return {
      code: ErrorCodes.URL_NOT_ALLOWED,
      message: "must not be an S3 website endpoint (they can redirect anywhere)",
    };
  }
  return { host };
}

function parseUrl(raw: string, base?: string): URL | UrlRefusal {
  if (hasControl(raw) || ENCODED_CONTROL.test(raw)) {
    return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must not contain spaces or control characters" };
  }
  if (!URL.canParse(raw, base)) {
    return { code: ErrorCodes.URL_NOT_ALLOWED, message: "must be a valid absolute URL" };
  }
  return new URL(raw, base);
}

/**
 * Builds the URL import policy: which URLs may be imported, how share links become downloads, which
 * URLs are the service's own storage (read internally) and which redirect hops may be followed.
 *
 * @example
 * ```ts
 * const policy = createUrlImportPolicy({ storageBaseUrls: ["https://cdn.example.com"] });
 * policy.resolve("https://bucket.s3.eu-west-1.amazonaws.com/cat.png");
 * // { ok: true, source: { kind: "remote", url: "https://bucket.s3...", provider: null } }
 * ```
 */
export function createUrlImportPolicy(options: UrlImportOptions = {}): UrlImportPolicy {
  const resolved = parseOptions(urlImportOptionsSchema, options, "URL import");
  const patterns = [...resolved.allowedOrigins, ...resolved.additionalOrigins];
  const storageBases = [
    ...resolved.storageBaseUrls,
    ...(resolved.originalStorageAlias ? [ORIGINAL_STORAGE_BASE_URL] : []),
  ].map(parseStorageBase);
  const providers = Object.values(SHARE_LINK_PROVIDERS);
  const providerFor = (host: string): ShareLinkProvider | undefined =>
    providers.find((provider) => provider.shareHosts.includes(host));

  function matchStorage(url: URL): UrlImportDecision | null {
    const host = normalizeHostName(url.hostname) ?? url.hostname;
    for (const base of storageBases) {
      if (base.protocol !== url.protocol || base.host !== host || base.port !== url.port) continue;
      if (!url.pathname.startsWith(`${base.prefix}/`)) continue;
      const keys = storageKeys(url.pathname.slice(base.prefix.length + 1));
      if (keys === null) {
        return refuse("must point to a published image of this service", ErrorCodes.SOURCE_NOT_ACCESSIBLE);
      }
      return { ok: true, source: { kind: "storage", keys } };
    }
    return null;
  }

  return {
    options: resolved,
    resolve(raw) {
      const url = parseUrl(raw);
      if (!(url instanceof URL)) return { ok: false, ...url };
      if (url.username !== "" || url.password !== "") {
        return refuse("must not contain credentials (user name or password)");
      }
      const storage = matchStorage(url);
      if (storage !== null) return storage;
      const shape = checkRemoteShape(url);
      if (!("host" in shape)) return { ok: false, ...shape };
      if (!patterns.some((pattern) => hostMatches(pattern, shape.host))) return refuse(NOT_ALLOWED);
      url.hostname = shape.host;
      url.hash = "";
      const provider = providerFor(shape.host);
      if (provider === undefined) {
        return { ok: true, source: { kind: "remote", url: url.href, provider: null } };
      }
      const download = provider.toDownloadUrl(url);
      if (typeof download === "string") return refuse(download);
      return { ok: true, source: { kind: "remote", url: download.href, provider: provider.name } };
    },
    checkRedirect(source, location, from) {
      const url = parseUrl(location, from);
      if (!(url instanceof URL)) return refuse("was redirected to an invalid URL");
      const shape = checkRemoteShape(url);
      if (!("host" in shape)) {
        return { ok: false, code: shape.code, message: `was redirected to a URL that ${shape.message}` };
      }
      const allowed =
        source.provider === null ? patterns : SHARE_LINK_PROVIDERS[source.provider].redirectHosts;
      if (!allowed.some((pattern) => hostMatches(pattern, shape.host))) {
        return refuse(`was redirected to a host that is not allowed (${shape.host})`);
      }
      url.hostname = shape.host;
      url.hash = "";
      return { ok: true, url: url.href };
    },
  };
}
