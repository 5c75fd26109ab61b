import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createImagePipeline,
  createMemoryImageRepository,
  type ImagePipeline,
  isImagePipelineError,
} from "@pixport/core";
import { createHttpOriginSource } from "@pixport/fetch-node";
import { createFsBlobStore } from "@pixport/storage-fs";
import { createVariantSigner, originVariantUrl } from "@pixport/url-signer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decode, halves, isClose, mean, removeDir, tempDataDir } from "./harness.js";
import { startLoopbackOrigin } from "./origin-fixtures.js";

const SECRET = "library-origin-secret-0123456789";
const RED: [number, number, number] = [255, 0, 0];
const BLUE: [number, number, number] = [0, 0, 255];

/**
 * A handler of the application's own (not pixport's route table): `/images/{signature}/{modifiers}/{path}.{ext}`
 * answered by `pipeline.deliverOriginVariant`, as docs/delivery.md shows for your own handler.
 */
function ownHandler(pipeline: ImagePipeline) {
  return async (request: IncomingMessage, response: ServerResponse) => {
    const match = /^\/images\/([^/]+)\/([^/]+)\/(.+)$/.exec(
      new URL(request.url ?? "/", "http://app").pathname,
    );
    if (match === null) return response.writeHead(404).end();
    try {
      const variant = await pipeline.deliverOriginVariant({
        signature: match[1]!,
        origin: "cms",
        modifiers: match[2]!,
        path: match[3]!,
        accept: request.headers.accept,
      });
      const headers = { ETag: variant.etag, "Cache-Control": variant.cacheControl, "X-Cache": variant.cache };
      if (request.headers["if-none-match"] === variant.etag) return response.writeHead(304, headers).end();
      response.writeHead(200, { ...headers, "Content-Type": variant.contentType }).end(variant.data);
    } catch (error) {
      // The application maps pixport's error codes to its own answers.
      response
        .writeHead(isImagePipelineError(error) ? 400 : 500)
        .end(isImagePipelineError(error) ? error.code : "");
    }
  };
}

describe("createImagePipeline with origins, in an application's own handler", () => {
  let origin: Awaited<ReturnType<typeof startLoopbackOrigin>>;
  let dataDir: string;
  let pipeline: ImagePipeline;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    origin = await startLoopbackOrigin();
    origin.put("/media/banner.png", await halves(120, 60, RED, BLUE));
    dataDir = await tempDataDir();
    pipeline = createImagePipeline(
      {
        codec: createSharpCodec(),
        blobStore: createFsBlobStore({ root: dataDir }),
        images: createMemoryImageRepository(),
        variantSigner: createVariantSigner([SECRET]),
        origins: {
          cms: createHttpOriginSource({ baseUrl: `${origin.url}/media/`, allowPrivateNetwork: true }),
        },
      },
      { delivery: { origins: { cms: { account: "library" } } } },
    );
    const handle = ownHandler(pipeline);
    server = createServer((request, response) => void handle(request, response));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    await origin?.close();
    if (dataDir !== undefined) await removeDir(dataDir);
  });

  it("delivers a signed origin variant, caches it on the blob store and counts the miss in the origin's account", async () => {
    const signed = await originVariantUrl({
      base: "",
      secret: SECRET,
      origin: "cms",
      path: "banner.png",
      modifiers: ["w_60"],
      ext: "png",
    });
    // The URL's own segments, under the application's path instead of /v/.
    const [, , signature, , , modifiers, ...path] = signed.split("/");
    const target = `${base}/images/${signature}/${modifiers}/${path.join("/")}`;
    const first = await fetch(target);
    expect(first.status, await first.clone().text()).toBe(200);
    expect(first.headers.get("x-cache")).toBe("MISS");
    const pixels = await decode(new Uint8Array(await first.arrayBuffer()));
    expect([pixels.width, pixels.height]).toEqual([60, 30]);
    expect(isClose(mean(pixels, 0, 0, 28, 30), RED)).toBe(true);
    expect(isClose(mean(pixels, 32, 0, 60, 30), BLUE)).toBe(true);
    const second = await fetch(target);
    expect(second.headers.get("x-cache")).toBe("HIT");
    const etag = second.headers.get("etag")!;
    expect((await fetch(target, { headers: { "If-None-Match": etag } })).status).toBe(304);
    const forged = await fetch(target.replace(`/images/${signature}/`, `/images/A${signature}/`));
    expect([forged.status, await forged.text()]).toEqual([400, "FORBIDDEN"]);
    expect(origin.counts.full.get("/media/banner.png")).toBe(1);
    expect((await pipeline.usage("library")).variants).toBe(1);
  });
});
