/** The origin-image group of the HTTP binding suite: `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`. */
import { originVariantUrl } from "@pixport/url-signer";
import { expect, it } from "vitest";
import { Colors, colorDistance, decodeRaw, meanOf } from "../fixtures/images.js";
import { ERRORS, type HttpSuite } from "./http-binding-client.js";

export function describeOriginDelivery(suite: HttpSuite): void {
  const { call, current } = suite;
  const signed = (path: string, modifiers: string[]) => {
    const { name, secret } = current().origin;
    return originVariantUrl({ base: "", secret, origin: name, path, modifiers, ext: "png" });
  };

  it("delivers a signed origin variant: the image resized, MISS then HIT, 304 on If-None-Match", async () => {
    await current().origin.put("catalog/red blue.png", suite.png);
    const path = await signed("catalog/red blue.png", ["w_16"]);
    const first = await call("GET", path);
    expect(first.status, new TextDecoder().decode(first.bytes)).toBe(200);
    expect(first.header("content-type")).toBe("image/png");
    expect(first.header("x-cache")).toBe("MISS");
    expect(first.header("x-content-type-options")).toBe("nosniff");
    const pixels = await decodeRaw(first.bytes);
    expect([pixels.width, pixels.height]).toEqual([16, 8]);
    expect(colorDistance(meanOf(pixels, { x: 0, y: 0, width: 7, height: 8 }), Colors.red)).toBeLessThan(24);
    expect(colorDistance(meanOf(pixels, { x: 9, y: 0, width: 7, height: 8 }), Colors.blue)).toBeLessThan(24);
    const second = await call("GET", path);
    expect(second.header("x-cache")).toBe("HIT");
    const etag = second.header("etag")!;
    expect(etag).toBe(first.header("etag"));
    const notModified = await call("GET", path, { headers: { "if-none-match": etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.bytes.byteLength).toBe(0);
  });

  it("refuses a forged origin variant URL (403) and answers a missing origin object 404 in the contract's shape", async () => {
    const path = await signed("catalog/red blue.png", ["w_8"]);
    const forged = path.replace(/^\/v\/([^/]+)\//, (_match: string, signature: string) => {
      return `/v/${signature.split("").reverse().join("")}/`;
    });
    expect((await call("GET", forged)).status).toBe(403);
    const missing = await call("GET", await signed("catalog/nothing.png", ["w_8"]));
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({
      type: `${ERRORS}not-found`,
      error: "Not Found",
      status: 404,
      code: "ORIGIN_NOT_FOUND",
    });
    expect(typeof missing.json.message).toBe("string");
  });
}
