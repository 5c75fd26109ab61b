import { isImagePipelineError } from "@pixport/core";
import { describe, expect, it } from "vitest";
import { type HttpRequest, parseMultipartUpload } from "../src/index.js";

const BOUNDARY = "----pixportboundary";

function part(name: string, value: string | Uint8Array, filename?: string): Uint8Array {
  const disposition = `Content-Disposition: form-data; name="${name}"${filename === undefined ? "" : `; filename="${filename}"`}`;
  const type = filename === undefined ? "" : "\r\nContent-Type: application/octet-stream";
  const head = new TextEncoder().encode(`--${BOUNDARY}\r\n${disposition}${type}\r\n\r\n`);
  const body = typeof value === "string" ? new TextEncoder().encode(value) : value;
  return concat([head, body, new TextEncoder().encode("\r\n")]);
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const result = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    result.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return result;
}

function body(...parts: Uint8Array[]): Uint8Array {
  return concat([...parts, new TextEncoder().encode(`--${BOUNDARY}--\r\n`)]);
}

function request(
  data: Uint8Array | AsyncIterable<Uint8Array>,
  contentType = `multipart/form-data; boundary=${BOUNDARY}`,
): HttpRequest {
  return {
    method: "POST",
    path: "/v1/images/upload",
    query: new URLSearchParams(),
    headers: { "content-type": contentType },
    body: data,
    baseUrl: "http://x",
  };
}

async function* chunked(data: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < data.byteLength; offset += size) yield data.subarray(offset, offset + size);
}

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isImagePipelineError(error)) throw new Error(`expected a pixport error, got ${String(error)}`);
  return error;
}

describe("parseMultipartUpload", () => {
  it("reads the name field and the image file, streamed in small chunks", async () => {
    const file = new Uint8Array(5000).map((_, index) => index % 251);
    const upload = await parseMultipartUpload(
      request(chunked(body(part("name", "cat"), part("image", file, "blob")), 7)),
      {
        maxFileBytes: 10_000,
      },
    );
    expect(upload.fields.get("name")).toBe("cat");
    expect(upload.file).toEqual(file);
  });

  it("rejects a file over the limit with a 422 naming image instead of truncating it", async () => {
    const error = await failure(
      parseMultipartUpload(request(body(part("name", "x"), part("image", new Uint8Array(1001), "blob"))), {
        maxFileBytes: 1000,
      }),
    );
    expect(error.code).toBe("IMAGE_TOO_LARGE");
    expect(error.issues).toEqual([{ path: "image", message: "must not be larger than 1000 bytes" }]);
  });

  it("accepts a file of exactly the limit", async () => {
    const upload = await parseMultipartUpload(request(body(part("image", new Uint8Array(1000), "blob"))), {
      maxFileBytes: 1000,
    });
    expect(upload.file?.byteLength).toBe(1000);
  });

  it("refuses a second file", async () => {
    const error = await failure(
      parseMultipartUpload(
        request(body(part("image", new Uint8Array(3), "a"), part("image", new Uint8Array(3), "b"))),
        {
          maxFileBytes: 1000,
        },
      ),
    );
    expect(error.issues).toEqual([{ path: "image", message: "must be a single file" }]);
  });

  it("keeps __proto__ and constructor field names inert", async () => {
    const upload = await parseMultipartUpload(
      request(body(part("__proto__", "polluted"), part("constructor", "x"), part("name", "ok"))),
      { maxFileBytes: 1000 },
    );
    expect(upload.fields.get("name")).toBe("ok");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(upload.fields)).toBe(Map.prototype);
  });

  it("answers too many parts and fields with BAD_REQUEST", async () => {
    const parts = Array.from({ length: 30 }, (_, index) => part(`f${index}`, "v"));
    const error = await failure(parseMultipartUpload(request(body(...parts)), { maxFileBytes: 1000 }));
    expect(error.code).toBe("BAD_REQUEST");
  });

  it("answers a missing boundary, a garbled body and a non-multipart type with BAD_REQUEST", async () => {
    expect(
      (
        await failure(
          parseMultipartUpload(request(new Uint8Array(4), "multipart/form-data"), { maxFileBytes: 10 }),
        )
      ).code,
    ).toBe("BAD_REQUEST");
    const garbled = new TextEncoder().encode(`--${BOUNDARY}\r\nno-header-end`);
    const result = await parseMultipartUpload(request(garbled), { maxFileBytes: 10 }).then(
      (value) => value,
      (error: unknown) => error,
    );
    if (isImagePipelineError(result)) expect(result.code).toBe("BAD_REQUEST");
    else expect((result as { file: unknown }).file).toBeUndefined();
  });

  it("rejects, without an uncaught error, when the client aborts mid-upload", async () => {
    async function* aborted(): AsyncIterable<Uint8Array> {
      yield part("name", "x");
      yield new TextEncoder().encode(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="b"\r\n\r\nabc`,
      );
      throw new Error("socket hang up");
    }
    const error = await failure(parseMultipartUpload(request(aborted()), { maxFileBytes: 1000 }));
    expect(error.code).toBe("BAD_REQUEST");
  });

  it("refuses an over-long text field", async () => {
    const error = await failure(
      parseMultipartUpload(request(body(part("name", "x".repeat(2000)))), { maxFileBytes: 1000 }),
    );
    expect(error.issues[0]?.path).toBe("name");
  });
});
