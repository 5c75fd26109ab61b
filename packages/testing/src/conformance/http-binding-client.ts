import { afterAll, beforeAll, expect } from "vitest";
import { Colors, halvesImage } from "../fixtures/images.js";
import type { HttpBindingConformanceOptions, HttpBindingTestContext } from "./http-binding.js";

export const IMAGE_KEYS = ["id", "name", "url", "width", "height", "format", "size", "created_at"];
export const ID = /^image_[a-z][a-z0-9]{23}$/;
export const ERRORS = "https://docs.img-processing.com/errors/";

export interface CallOptions {
  key?: string;
  json?: unknown;
  raw?: string | Uint8Array;
  contentType?: string;
  form?: FormData;
  headers?: Record<string, string>;
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON bodies are asserted field by field.
export type Json = any;

export interface CallResult {
  status: number;
  header(name: string): string | undefined;
  json: Json;
  bytes: Uint8Array;
}

/** A multipart form with the SDK's part order (`name` first, then `image`). */
export function uploadForm(
  name: string | undefined,
  image: Uint8Array | undefined,
  filename = "blob",
): FormData {
  const form = new FormData();
  if (name !== undefined) form.append("name", name);
  if (image !== undefined) form.append("image", new Blob([image as Uint8Array<ArrayBuffer>]), filename);
  return form;
}

/** What every group of the HTTP binding suite runs on: the mounted binding, its keys, a client. */
export interface HttpSuite {
  /** The mount URL (list links lie under it). */
  readonly base: string;
  /** A test key, a live key (both of account `acme`) and a test key of account `globex`. */
  readonly testKey: string;
  readonly liveKey: string;
  readonly otherAccountKey: string;
  /** A 64x32 PNG, red left half, blue right half. */
  readonly png: Uint8Array;
  /** The binding's context (only while the suite runs). */
  current(): HttpBindingTestContext;
  /** Sends through the driver; absolute URLs (list links) must lie under the mount URL. */
  call(method: string, target: string, callOptions?: CallOptions): Promise<CallResult>;
  /** Uploads `image` as `name` with `key`, answering the created image (throws unless 201). */
  upload(key: string, image: Uint8Array, name?: string): Promise<Json>;
}

/** The suite's shared state and client; call inside its `describe` (it sets up in `beforeAll`). */
export function createHttpSuite(options: HttpBindingConformanceOptions): HttpSuite {
  let context: HttpBindingTestContext | undefined;
  const current = (): HttpBindingTestContext => {
    if (context === undefined) throw new Error("the binding's setup did not complete");
    return context;
  };
  const suite = {
    base: "",
    testKey: "",
    liveKey: "",
    otherAccountKey: "",
    png: new Uint8Array(0) as Uint8Array,
    current,
    call,
    upload,
  };

  beforeAll(async () => {
    context = await options.setup();
    suite.base = context.baseUrl;
    suite.testKey = await context.createKey("test", "acme");
    suite.liveKey = await context.createKey("live", "acme");
    suite.otherAccountKey = await context.createKey("test", "globex");
    suite.png = await halvesImage(64, 32, Colors.red, Colors.blue);
  });

  afterAll(async () => {
    if (context !== undefined) await options.teardown?.(context);
  });

  /** Sends through the driver; absolute URLs (list links) must lie under the mount URL. */
  async function call(method: string, target: string, callOptions: CallOptions = {}): Promise<CallResult> {
    let path = target;
    if (/^https?:\/\//.test(target)) {
      expect(target.startsWith(`${suite.base}/`), `${target} is not under ${suite.base}`).toBe(true);
      path = target.slice(suite.base.length);
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(callOptions.headers ?? {}))
      headers[name.toLowerCase()] = value;
    if (callOptions.key !== undefined) headers["x-api-key"] = callOptions.key;
    let body: Uint8Array | undefined;
    if (callOptions.json !== undefined) {
      headers["content-type"] = "application/json";
      body = new TextEncoder().encode(JSON.stringify(callOptions.json));
    } else if (callOptions.raw !== undefined) {
      if (callOptions.contentType !== undefined) headers["content-type"] = callOptions.contentType;
      body =
        typeof callOptions.raw === "string" ? new TextEncoder().encode(callOptions.raw) : callOptions.raw;
    } else if (callOptions.form !== undefined) {
      // Serialise the form exactly as fetch would, so every driver sends the same bytes.
      const encoded = new Request("http://form.invalid/", { method: "POST", body: callOptions.form });
      headers["content-type"] = encoded.headers.get("content-type") ?? "";
      body = new Uint8Array(await encoded.arrayBuffer());
    }
    const response = await current().send({ method, path, headers, body });
    const lowerCase = Object.fromEntries(
      Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    let json: Json;
    if ((lowerCase["content-type"] ?? "").includes("application/json")) {
      json = JSON.parse(new TextDecoder().decode(response.body));
    }
    return {
      status: response.status,
      header: (name) => lowerCase[name.toLowerCase()],
      json,
      bytes: response.body,
    };
  }

  async function upload(key: string, image: Uint8Array, name = "fixture"): Promise<Json> {
    const response = await call("POST", "/v1/images/upload", { key, form: uploadForm(name, image) });
    if (response.status !== 201)
      throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.json)}`);
    return response.json;
  }

  return suite;
}
