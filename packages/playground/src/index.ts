/**
 * `@pixport/playground`: the web playground (`/`) and the API reference (`/docs`) as static files
 * built at build time, served from memory by one framework-neutral function, with a Node/Express
 * middleware on top. No CDN, font or script from elsewhere: the reference is Swagger UI from the
 * `swagger-ui-dist` npm package, served from this process.
 *
 * Caching: the two pages are `no-cache` (revalidated with their ETag, so a new deployment shows
 * at once); every asset has its content hash or version in its URL and is `immutable` for a year.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Options of {@link createPlaygroundSite}. */
export interface PlaygroundSiteOptions {
  /** Serve the playground at `/`. @default true */
  playground?: boolean;
  /** Serve the API reference at `/docs`. @default true */
  docs?: boolean;
  /** Where the API's OpenAPI document is, for the reference. @default "/v1/openapi.json" */
  openApiUrl?: string;
}

/** One answer of the site. */
export interface SiteResponse {
  status: number;
  headers: Record<string, string>;
  /** Empty for HEAD and 304. */
  body: Uint8Array;
}

/** The site: {@link SiteResponse}s for its paths, and a middleware for Node's http and Express. */
export interface PlaygroundSite {
  /**
   * The answer for a request, or `undefined` when the path is not the site's (the API's, say).
   * Framework-neutral: Fastify, Lambda or a service worker send it as they send anything.
   */
  respond(request: {
    method: string;
    url: string;
    headers?: Record<string, string | string[] | undefined>;
  }): SiteResponse | undefined;
  /** `(request, response, next)`: answers the site's paths, calls `next()` for every other one. */
  middleware(
    request: { method?: string; url?: string; headers: Record<string, string | string[] | undefined> },
    response: {
      writeHead(status: number, headers: Record<string, string>): unknown;
      end(body?: Uint8Array): unknown;
    },
    next: () => void,
  ): void;
  /** The paths served (for a binding that registers routes one by one). */
  paths: readonly string[];
}

interface Asset {
  type: string;
  bytes: Uint8Array;
  etag: string;
  immutable: boolean;
  csp?: string;
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".png": "image/png",
};

// Every script and style comes from this origin. Images may come from the public storage (another
// origin on S3) and from blob: URLs of downloaded bytes; requests go to this origin's API only.
const PLAYGROUND_CSP =
  "default-src 'self'; img-src 'self' blob: data: http: https:; connect-src 'self'; style-src 'self'; " +
  "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";
// Swagger UI sets inline styles on its elements and shows its logo as a data: image.
const DOCS_CSP =
  "default-src 'self'; img-src 'self' data:; connect-src 'self'; style-src 'self' 'unsafe-inline'; " +
  "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

const hashOf = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64url").slice(0, 16);

function asset(file: string, bytes: Uint8Array, immutable: boolean, csp?: string): Asset {
  return {
    type: TYPES[path.extname(file)] ?? "application/octet-stream",
    bytes,
    etag: `"${hashOf(bytes)}"`,
    immutable,
    ...(csp === undefined ? {} : { csp }),
  };
}

/** The built browser files: `dist/site` next to the built module, or from the sources' side. */
function siteDirectory(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, "site"), path.join(here, "..", "dist", "site")]) {
    if (existsSync(path.join(candidate, "playground.js"))) return candidate;
  }
  throw new Error(
    "@pixport/playground: the built pages are missing (dist/site); build the package first (pnpm run build)",
  );
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * Loads the pages into memory (about 1.6 MB with Swagger UI) and returns the site. Throws when the
 * package was not built.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { createPlaygroundSite } from "@pixport/playground";
 * const app = express();
 * app.use(createPlaygroundSite().middleware); // before the API's router
 * ```
 */
export function createPlaygroundSite(options: PlaygroundSiteOptions = {}): PlaygroundSite {
  const assets = new Map<string, Asset>();
  const dir = siteDirectory();
  if (options.playground !== false) addPlaygroundAssets(assets, dir);
  if (options.docs !== false) addDocsAssets(assets, dir, options.openApiUrl ?? "/v1/openapi.json");
  const respond = respondFrom(assets);

  return {
    respond,
    paths: [...assets.keys()],
    middleware(request, response, next) {
      const answer = respond({
        method: request.method ?? "GET",
        url: request.url ?? "/",
        headers: request.headers,
      });
      if (answer === undefined) {
        next();
        return;
      }
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body);
    },
  };
}

/** The playground page, its script and its style, each under a path that names its content. */
function addPlaygroundAssets(assets: Map<string, Asset>, dir: string): void {
  const script = readFileSync(path.join(dir, "playground.js"));
  const style = readFileSync(path.join(dir, "playground.css"));
  const scriptPath = `/playground/app.${hashOf(script)}.js`;
  const stylePath = `/playground/app.${hashOf(style)}.css`;
  assets.set(scriptPath, asset(scriptPath, script, true));
  assets.set(stylePath, asset(stylePath, style, true));
  const page = readFileSync(path.join(dir, "index.html"), "utf8")
    .replace("%SCRIPT%", scriptPath)
    .replace("%STYLE%", stylePath);
  assets.set("/", asset("index.html", new TextEncoder().encode(page), false, PLAYGROUND_CSP));
}

/** The API reference: Swagger UI (from swagger-ui-dist), its start script and its page. */
function addDocsAssets(assets: Map<string, Asset>, dir: string, openApiUrl: string): void {
  const require = createRequire(import.meta.url);
  const swaggerDir = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  const version = (
    JSON.parse(readFileSync(path.join(swaggerDir, "package.json"), "utf8")) as { version: string }
  ).version;
  const base = `/docs/swagger-ui/${version}`;
  for (const file of ["swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"]) {
    assets.set(`${base}/${file}`, asset(file, readFileSync(path.join(swaggerDir, file)), true));
  }
  const init = readFileSync(path.join(dir, "docs.js"));
  const initPath = `/docs/init.${hashOf(init)}.js`;
  assets.set(initPath, asset(initPath, init, true));
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pixport API reference</title>
<link rel="icon" href="${base}/favicon-32x32.png">
<link rel="stylesheet" href="${base}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${escapeHtml(openApiUrl)}"></div>
<script src="${base}/swagger-ui-bundle.js"></script>
<script src="${initPath}"></script>
</body>
</html>
`;
  assets.set("/docs", asset("docs.html", new TextEncoder().encode(page), false, DOCS_CSP));
}

/** Answers a GET or HEAD of one of `assets` (304 to a matching `If-None-Match`), else `undefined`. */
function respondFrom(assets: ReadonlyMap<string, Asset>): PlaygroundSite["respond"] {
  return (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return undefined;
    const pathname = request.url.split("?")[0] ?? "/";
    const found = assets.get(pathname === "/docs/" ? "/docs" : pathname);
    if (found === undefined) return undefined;
    const headers: Record<string, string> = {
      "Content-Type": found.type,
      ETag: found.etag,
      "Cache-Control": found.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
    };
    if (found.csp !== undefined) headers["Content-Security-Policy"] = found.csp;
    const match = request.headers?.["if-none-match"];
    if (
      match !== undefined &&
      String(match)
        .split(/\s*,\s*/)
        .includes(found.etag)
    ) {
      return { status: 304, headers, body: new Uint8Array() };
    }
    headers["Content-Length"] = String(found.bytes.byteLength);
    return { status: 200, headers, body: request.method === "HEAD" ? new Uint8Array() : found.bytes };
  };
}
