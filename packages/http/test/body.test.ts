import { describe, expect, it } from "vitest";
import { type HttpRequest, readJsonBody } from "../src/index.js";

function request(body: string | null, contentType?: string): HttpRequest {
  return {
    method: "POST",
    path: "/v1/images/x/blur",
    query: new URLSearchParams(),
    headers: contentType === undefined ? {} : { "content-type": contentType },
    body: body === null ? null : new TextEncoder().encode(body),
    baseUrl: "http://x",
  };
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (error: { code?: string }) => error.code,
  );

describe("readJsonBody", () => {
  it("parses JSON objects, +json types and charset parameters", async () => {
    expect(await readJsonBody(request('{"sigma":3}', "application/json; charset=utf-8"), 1024)).toEqual({
      sigma: 3,
    });
    expect(await readJsonBody(request("{}", "application/merge-patch+json"), 1024)).toEqual({});
  });

  it("treats no body and no content type as absent", async () => {
    expect(await readJsonBody(request(null), 1024)).toBeUndefined();
    expect(await readJsonBody(request(""), 1024)).toBeUndefined();
  });

  it("answers an empty JSON body, malformed JSON, invalid UTF-8 and a wrong content type with BAD_REQUEST", async () => {
    expect(await code(readJsonBody(request("", "application/json"), 1024))).toBe("BAD_REQUEST");
    expect(await code(readJsonBody(request("{oops", "application/json"), 1024))).toBe("BAD_REQUEST");
    expect(await code(readJsonBody(request("sigma=3", "text/plain"), 1024))).toBe("BAD_REQUEST");
    const invalidUtf8: HttpRequest = {
      ...request(null, "application/json"),
      body: new Uint8Array([0x7b, 0xff, 0x7d]),
    };
    expect(await code(readJsonBody(invalidUtf8, 1024))).toBe("BAD_REQUEST");
  });

  it("refuses bodies over the limit while streaming, whatever Content-Length says", async () => {
    async function* stream() {
      for (let index = 0; index < 100; index++) yield new TextEncoder().encode(" ".repeat(100));
    }
    const streamed: HttpRequest = {
      ...request(null, "application/json"),
      headers: { "content-type": "application/json", "content-length": "10" },
      body: stream(),
    };
    expect(await code(readJsonBody(streamed, 1024))).toBe("BAD_REQUEST");
  });

  it("does not let __proto__ keys pollute prototypes", async () => {
    const parsed = (await readJsonBody(
      request('{"__proto__":{"polluted":true}}', "application/json"),
      1024,
    )) as object;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
  });

  it("survives deeply nested JSON without a stack overflow", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const result = await readJsonBody(request(deep, "application/json"), 1024 * 1024).then(
      () => "parsed",
      (error: { code?: string }) => error.code,
    );
    expect(["parsed", "BAD_REQUEST"]).toContain(result);
  });
});
