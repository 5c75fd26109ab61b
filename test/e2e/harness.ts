import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { KeyKind } from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import { createApiKey, type PixportServer, resolveServerConfig, startPixportServer } from "@pixport/server";
import { variantUrl } from "@pixport/url-signer";
import express from "express";
import sharp from "sharp";
import { afterAll, beforeAll } from "vitest";

/** Codecs the HTTP end-to-end suites run against: each suite runs once per codec, on its own server. */
export const CODECS = ["sharp", "jimp"] as const;

export const IMAGE_KEYS = ["id", "name", "url", "width", "height", "format", "size", "created_at"];
export const ID = /^image_[a-z][a-z0-9]{23}$/;

/** A temporary data directory, removed by the returned cleanup. */
export async function tempDataDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), "pixport-e2e-"));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Starts the prebuilt server in-process on a random loopback port over `dataDir`. */
export async function startServer(
  dataDir: string,
  overrides: Record<string, unknown> = {},
): Promise<PixportServer> {
  return startPixportServer(
    resolveServerConfig({
      port: 0,
      host: "127.0.0.1",
      dataDir,
      log: false,
      // These suites check the API, not the rate limits (test/e2e/policies.test.ts does): lift them.
      policies: { testRequestsPerMinute: 1_000_000, liveRequestsPerMinute: 1_000_000 },
      ...overrides,
    }),
  );
}

/** The live server of a suite that called {@link useServer}. */
export interface ServerHandle {
  readonly server: PixportServer;
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly dataDir: string;
}

/**
 * Starts an in-process server over a fresh data directory before the enclosing suite's tests
 * (`beforeAll`) and closes it and removes the directory after them (`afterAll`). Read the handle's
 * fields inside hooks and tests, not while declaring them.
 */
export function useServer(
  overrides: Record<string, unknown> | (() => Record<string, unknown>) = {},
): ServerHandle {
  let current: { server: PixportServer; dataDir: string } | undefined;
  const live = () => {
    if (current === undefined) throw new Error("The suite's server exists only while its tests run.");
    return current;
  };
  beforeAll(async () => {
    const dataDir = await tempDataDir();
    const server = await startServer(dataDir, typeof overrides === "function" ? overrides() : overrides);
    current = { server, dataDir };
  });
  afterAll(async () => {
    if (current === undefined) return;
    await current.server.close();
    await removeDir(current.dataDir);
    current = undefined;
  });
  return {
    get server() {
      return live().server;
    },
    get url() {
      return live().server.url;
    },
    get dataDir() {
      return live().dataDir;
    },
  };
}

/**
 * A new key for `accountId`. Live keys belong to an upgraded account unless `trial` is set, so
 * suites that make many images are not cut off by the 25-images-a-month trial quota.
 */
export async function newKey(
  server: PixportServer,
  kind: KeyKind,
  accountId: string,
  options: { trial?: boolean } = {},
): Promise<string> {
  if (kind === "live" && options.trial !== true) await server.accounts.setUpgraded(accountId, true);
  return (await createApiKey(server.keys, { kind, accountId })).key;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  json: any;
  bytes: Uint8Array;
}

/** Sends a request over a real socket. `json` sets a JSON body; `form` a multipart body. */
export async function call(
  baseUrl: string,
  method: string,
  pathname: string,
  options: {
    key?: string;
    json?: unknown;
    raw?: string | Uint8Array;
    contentType?: string;
    form?: FormData;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers["x-api-key"] = options.key;
  let body: RequestInit["body"];
  if (options.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.json);
  } else if (options.raw !== undefined) {
    if (options.contentType !== undefined) headers["content-type"] = options.contentType;
    body = options.raw as RequestInit["body"];
  } else if (options.form !== undefined) {
    body = options.form;
  }
  const response = await fetch(pathname.startsWith("http") ? pathname : `${baseUrl}${pathname}`, {
    method,
    headers,
    body,
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  let json: any;
  if ((response.headers.get("content-type") ?? "").includes("application/json")) {
    json = JSON.parse(new TextDecoder().decode(bytes));
  }
  return { status: response.status, headers: response.headers, json, bytes };
}

/** A multipart upload form with the SDK's part order (`name` first, then `image`). */
export function uploadForm(
  name: string | undefined,
  image: Uint8Array | undefined,
  filename = "blob",
): FormData {
  const form = new FormData();
  if (name !== undefined) form.append("name", name);
  if (image !== undefined) form.append("image", new Blob([image]), filename);
  return form;
}

export async function upload(
  baseUrl: string,
  key: string,
  image: Uint8Array,
  name = "fixture",
): Promise<any> {
  const response = await call(baseUrl, "POST", "/v1/images/upload", { key, form: uploadForm(name, image) });
  if (response.status !== 201)
    throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.json)}`);
  return response.json;
}

type Rgb = [number, number, number];

/** A PNG/JPEG/WebP whose left half is `left` and right half is `right`. */
export async function halves(
  width: number,
  height: number,
  left: Rgb,
  right: Rgb,
  format: "png" | "jpeg" | "webp" = "png",
) {
  const half = Math.floor(width / 2);
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const colour = x < half ? left : right;
      raw.set(colour, (y * width + x) * 3);
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .toFormat(format)
      .toBuffer(),
  );
}

/** A four-quadrant image: top-left red, top-right green, bottom-left blue, bottom-right white. */
export async function quadrants(width: number, height: number, format: "png" | "jpeg" = "png") {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const top = y < height / 2;
      const leftSide = x < width / 2;
      const colour: Rgb = top
        ? leftSide
          ? [255, 0, 0]
          : [0, 255, 0]
        : leftSide
          ? [0, 0, 255]
          : [255, 255, 255];
      raw.set(colour, (y * width + x) * 3);
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .toFormat(format)
      .toBuffer(),
  );
}

export async function solid(width: number, height: number, colour: Rgb, format: "png" | "jpeg" = "png") {
  return new Uint8Array(
    await sharp({
      create: { width, height, channels: 3, background: { r: colour[0], g: colour[1], b: colour[2] } },
    })
      .toFormat(format)
      .toBuffer(),
  );
}

/** A photo-like JPEG (smooth gradients plus noise), so quality settings change the file size. */
export async function photo(width: number, height: number): Promise<Uint8Array> {
  const raw = Buffer.alloc(width * height * 3);
  let seed = 42;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 40;
      raw.set(
        [(x * 255) / width + noise / 2, (y * 255) / height, ((x + y) * 127) / (width + height) + noise],
        (y * width + x) * 3,
      );
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 95 })
      .toBuffer(),
  );
}

export interface Raw {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

export async function decode(bytes: Uint8Array): Promise<Raw> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

export function pixel(raw: Raw, x: number, y: number): number[] {
  const offset = (y * raw.width + x) * raw.channels;
  return [...raw.data.subarray(offset, offset + raw.channels)];
}

/** Mean of each channel over a region. */
export function mean(raw: Raw, x0 = 0, y0 = 0, x1 = raw.width, y1 = raw.height): number[] {
  const sums = new Array(raw.channels).fill(0);
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const offset = (y * raw.width + x) * raw.channels;
      for (let c = 0; c < raw.channels; c++) sums[c] += raw.data[offset + c]!;
    }
  }
  const count = (x1 - x0) * (y1 - y0);
  return sums.map((sum) => sum / count);
}

export function isClose(actual: number[], expected: number[], tolerance = 12): boolean {
  return expected.every((value, index) => Math.abs((actual[index] ?? -999) - value) <= tolerance);
}

/** The built CLI (`pnpm build` runs before the tests in `pnpm test`). */
export const CLI = fileURLToPath(new URL("../../packages/server/dist/cli.js", import.meta.url));

/** A prebuilt server running as its own process. */
export interface PrebuiltNode {
  child: ChildProcess;
  url: string;
  /** Everything it printed so far. */
  output(): string;
}

/** The prebuilt server's launcher: `pixport serve` on the allocator it picks (what `pnpm start` runs). */
export const LAUNCHER = fileURLToPath(new URL("../../packages/server/bin/pixport-serve", import.meta.url));

/**
 * Starts the built `pixport serve` on a random loopback port over `dataDir`, with `environment`
 * added to this process's environment, and resolves once it prints its banner (a server that prints
 * none within 20 s is killed). With `launcher`, through `packages/server/bin/pixport-serve` (which
 * execs node in its place: same pid). With `stderr`, a file descriptor its stderr is written to
 * instead of being kept in `output()`.
 */
export async function spawnPrebuiltServer(
  dataDir: string,
  environment: Record<string, string> = {},
  { launcher = false, stderr }: { launcher?: boolean; stderr?: number } = {},
): Promise<PrebuiltNode> {
  if (!existsSync(CLI))
    throw new Error(`${CLI} is missing: run \`pnpm build\` first (the test script does).`);
  const flags = ["--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir];
  const child = spawn(
    launcher ? "sh" : process.execPath,
    launcher ? [LAUNCHER, ...flags] : [CLI, "serve", ...flags],
    {
      env: { ...process.env, PIXPORT_LOG: "false", ...environment },
      stdio: ["ignore", "pipe", stderr ?? "pipe"],
    },
  );
  let output = "";
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no banner: ${output}`));
    }, 20_000);
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  return { child, url, output: () => output };
}

/** Stops a prebuilt server process with SIGTERM and waits for it to exit. */
export async function stopPrebuiltServer(node: Pick<PrebuiltNode, "child">): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((resolve) => node.child.once("exit", resolve));
  node.child.kill("SIGTERM");
  await exited;
}

/** A pipeline's HTTP handler behind Express on a loopback port (see {@link startExpressNode}). */
export interface ExpressNode {
  readonly server: Server;
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly base: string;
  close(): Promise<void>;
}

/** Serves `pipeline`'s route table through the Express binding on a random loopback port. */
export async function startExpressNode(
  pipeline: Parameters<typeof createHttpHandler>[0],
): Promise<ExpressNode> {
  const app = express();
  app.use(createExpressRouter(createHttpHandler(pipeline)));
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    server,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.close();
      await once(server, "close");
    },
  };
}

/** GETs the variant URL signed with `secret` of an image on `running`, sending `accept`. */
export function variantGetter(
  running: ServerHandle,
  secret: string,
): (imageId: string, modifiers: string[], ext: string, accept?: string) => Promise<ApiResponse> {
  return async (imageId, modifiers, ext, accept = "*/*") =>
    call(
      running.url,
      "GET",
      await variantUrl({ base: running.url, secret, imageId, modifiers, ext: ext as never }),
      { headers: { accept } },
    );
}

/** RGBA pixels of `bytes` flattened onto black, as variants are, in the shape ssim.js reads. */
export async function shownPixels(
  bytes: Uint8Array,
): Promise<{ data: Uint8ClampedArray; width: number; height: number }> {
  const { data, info } = await sharp(bytes)
    .flatten({ background: "#000" })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8ClampedArray(data), width: info.width, height: info.height };
}
