import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { pngBomb, startS3Server, type TestS3Server } from "@pixport/testing";
import { originSignedPath, originVariantUrl, sign, unsignedOriginUrl } from "@pixport/url-signer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, decode, halves, isClose, mean, solid, useServer } from "./harness.js";
import { rawGet, startLoopbackOrigin } from "./origin-fixtures.js";
import { s3ClientOf } from "./shared-stores.js";

const SECRET = "origin-delivery-secret-0123456789";
const RED: [number, number, number] = [255, 0, 0];
const BLUE: [number, number, number] = [0, 0, 255];
const GREEN: [number, number, number] = [0, 255, 0];
const HINTS = "Sec-CH-Width, Width, Sec-CH-DPR, DPR";
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let origin: Awaited<ReturnType<typeof startLoopbackOrigin>>;
let s3: TestS3Server;
let s3Client: S3Client;
let assets: string;

beforeAll(async () => {
  const png = await halves(80, 40, RED, BLUE);
  const bomb = pngBomb();
  origin = await startLoopbackOrigin({
    "/moved/a.png": (_request, response) => response.writeHead(302, { Location: "/photos/a.png" }).end(),
    "/away/a.png": (_request, response) =>
      response.writeHead(302, { Location: "http://elsewhere.example/a.png" }).end(),
    "/slow/a.png": (_request, response) => {
      response.writeHead(200, { "Content-Type": "image/png" });
      response.write(png.subarray(0, 30));
    },
    "/huge/a.png": (_request, response) => {
      // 50 MB: a PNG signature, then zeros, streamed without a Content-Length.
      response.writeHead(200, { "Content-Type": "image/png" });
      const chunk = new Uint8Array(1024 * 1024);
      chunk.set(png.subarray(0, 16));
      let sent = 0;
      const more = () => {
        while (sent < 50 && response.write(chunk)) sent += 1;
        if (sent >= 50) response.end();
        else response.once("drain", more);
      };
      response.on("error", () => undefined);
      more();
    },
    "/page/a.png": (_request, response) =>
      response.writeHead(200, { "Content-Type": "image/png" }).end("<html><body>not found</body></html>"),
    "/boom/a.png": (_request, response) => response.writeHead(500).end(),
    // A small file whose header declares 20,000 x 20,000 px.
    "/bomb/a.png": (_request, response) => response.writeHead(200, { "Content-Type": "image/png" }).end(bomb),
  });
  origin.put("/photos/a.png", png);
  s3 = await startS3Server(["media"]);
  s3Client = s3ClientOf(s3);
  await s3Client.send(
    new PutObjectCommand({
      Bucket: "media",
      Key: "shop/shoe one.png",
      Body: await solid(60, 30, GREEN),
      ContentType: "image/png",
    }),
  );
  const parent = await mkdtemp(path.join(tmpdir(), "pixport-origin-assets-"));
  assets = path.join(parent, "assets");
  await mkdir(path.join(assets, "icons"), { recursive: true });
  await writeFile(path.join(assets, "icons", "blue.png"), await solid(20, 20, BLUE));
  await writeFile(path.join(parent, "secret.png"), await solid(20, 20, RED));
  await symlink(path.join(parent, "secret.png"), path.join(assets, "icons", "out.png"));
});

afterAll(async () => {
  await origin.close();
  s3Client.destroy();
  await s3.stop();
  await rm(path.dirname(assets), { recursive: true, force: true });
});

describe("origin-image delivery over real sockets", () => {
  const running = useServer(() => ({
    delivery: {
      signingKeys: [SECRET],
      origins: {
        cms: {
          type: "http",
          baseUrl: `${origin.url}/`,
          allowPrivateNetwork: true,
          account: "acct-cms",
          timeoutMs: 1500,
        },
        short: { type: "http", baseUrl: `${origin.url}/`, allowPrivateNetwork: true, ttlSeconds: 1 },
        open: {
          type: "http",
          baseUrl: `${origin.url}/`,
          allowPrivateNetwork: true,
          unsigned: { widths: [20, 40], qualities: [75], formats: ["auto", "png"] },
        },
        bucket: {
          type: "s3",
          bucket: "media",
          prefix: "shop/",
          endpoint: s3.endpoint,
          region: s3.region,
          forcePathStyle: true,
          accessKeyId: s3.credentials.accessKeyId,
          secretAccessKey: s3.credentials.secretAccessKey,
        },
        assets: { type: "fs", directory: assets },
      },
    },
  }));
  const url = (originName: string, file: string, modifiers: string[] = [], ext = "png") =>
    originVariantUrl({
      base: running.url,
      secret: SECRET,
      origin: originName,
      path: file,
      modifiers,
      ext: ext as never,
    });
  const get = (target: string, headers: Record<string, string> = {}) =>
    call(running.url, "GET", target, { headers });

  it("serves a resized variant of an http origin's image, computed once and then a hit", async () => {
    const first = await get(await url("cms", "photos/a.png", ["w_40"]));
    expect(first.status).toBe(200);
    expect(first.headers.get("x-cache")).toBe("MISS");
    const raw = await decode(first.bytes);
    expect([raw.width, raw.height]).toEqual([40, 20]);
    expect(isClose(mean(raw, 0, 0, 18, 20), RED)).toBe(true);
    expect(isClose(mean(raw, 22, 0, 40, 20), BLUE)).toBe(true);
    const second = await get(await url("cms", "photos/a.png", ["w_40"]));
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(second.headers.get("etag")).toBe(first.headers.get("etag"));
    const again = await get(await url("cms", "photos/a.png", ["w_40"]), {
      "If-None-Match": first.headers.get("etag")!,
    });
    expect(again.status).toBe(304);
    expect(origin.counts.full.get("/photos/a.png")).toBe(1);
    expect((await running.server.pipeline.usage("acct-cms")).variants).toBe(1);
  });

  it("negotiates auto from Accept and follows a redirect on the origin", async () => {
    const webp = await get(await url("cms", "moved/a.png", ["w_20"], "auto"), { Accept: "image/webp,*/*" });
    expect(webp.status).toBe(200);
    expect(webp.headers.get("content-type")).toBe("image/webp");
    expect(webp.headers.get("vary")).toBe("Accept");
  });

  it("serves s3 and fs origins, paths that need encoding included", async () => {
    const shoe = await get(await url("bucket", "shoe one.png", ["w_30"]));
    expect(shoe.status).toBe(200);
    const green = await decode(shoe.bytes);
    expect([green.width, green.height]).toEqual([30, 15]);
    expect(isClose(mean(green), GREEN)).toBe(true);
    const icon = await get(await url("assets", "icons/blue.png", ["w_10"]));
    expect(icon.status).toBe(200);
    expect(isClose(mean(await decode(icon.bytes)), BLUE)).toBe(true);
  });

  it("takes w_auto's width from client hints, advertising them and varying by them", async () => {
    origin.put("/hints/e.png", await halves(400, 100, RED, BLUE));
    const target = await url("cms", "hints/e.png", ["w_auto:100"]);
    const cases: [Record<string, string>, number][] = [
      [{}, 100],
      [{ "sec-ch-width": "150" }, 200],
      [{ width: "230" }, 300],
      [{ "sec-ch-dpr": "2" }, 200],
      [{ "sec-ch-width": "5000" }, 400],
    ];
    for (const [headers, width] of cases) {
      const answer = await get(target, headers);
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      expect((await decode(answer.bytes)).width, JSON.stringify(headers)).toBe(width);
      expect(answer.headers.get("vary")).toBe(HINTS);
      expect(answer.headers.get("accept-ch")).toBe(HINTS);
    }
    const sameStep = await get(target, { "sec-ch-width": "199" });
    expect(sameStep.headers.get("x-cache")).toBe("HIT");
    const auto = await get(await url("cms", "hints/e.png", ["w_auto:100"], "auto"), {
      accept: "image/webp",
      "sec-ch-width": "300",
    });
    expect(auto.headers.get("vary")).toBe(`Accept, ${HINTS}`);
    expect((await decode(auto.bytes)).width).toBe(300);
    const fixed = await get(await url("cms", "hints/e.png", ["w_100"]), { "sec-ch-width": "300" });
    expect((await decode(fixed.bytes)).width).toBe(100);
    expect(fixed.headers.get("vary")).toBeNull();
    expect(fixed.headers.get("accept-ch")).toBe(HINTS);
    expect(origin.counts.full.get("/hints/e.png")).toBe(1);
  });

  it("checks signatures, and the allow-list of an unsigned origin", async () => {
    const signed = await url("cms", "photos/a.png", ["w_40"]);
    expect((await get(signed.replace("/v/", "/v/A"))).status).toBe(403);
    const unsigned = (originName: string, modifiers: string[], ext = "png") =>
      unsignedOriginUrl({
        base: running.url,
        origin: originName,
        path: "photos/a.png",
        modifiers,
        ext: ext as never,
      });
    expect((await get(unsigned("cms", ["w_40"]))).status, "a signed origin").toBe(403);
    expect((await get(unsigned("open", ["w_40"]))).status).toBe(200);
    expect((await get(unsigned("open", ["q_75", "w_20"]))).status).toBe(200);
    expect((await get(unsigned("open", ["w_30"]))).status, "a width off the list").toBe(403);
    expect((await get(unsigned("open", ["q_80", "w_20"]))).status, "a quality off the list").toBe(403);
    expect((await get(unsigned("open", ["blur_5", "w_20"]))).status, "another modifier").toBe(403);
    expect((await get(unsigned("open", ["w_20"], "webp"))).status, "a format off the list").toBe(403);
    expect((await get(unsigned("open", []))).status, "no width").toBe(403);
  });

  it("revalidates after the freshness: unchanged is a 304 without the bytes, changed is a new variant", async () => {
    origin.put("/reval/b.png", await solid(40, 20, RED));
    const target = await url("short", "reval/b.png", ["w_20"]);
    const first = await get(target);
    expect(isClose(mean(await decode(first.bytes)), RED)).toBe(true);
    await wait(1200);
    const unchanged = await get(target);
    expect(unchanged.headers.get("x-cache")).toBe("HIT");
    expect(origin.counts.notModified.get("/reval/b.png")).toBe(1);
    expect(origin.counts.full.get("/reval/b.png")).toBe(1);
    origin.put("/reval/b.png", await solid(40, 20, BLUE));
    await wait(1200);
    const changed = await get(target);
    expect(changed.headers.get("x-cache")).toBe("MISS");
    expect(changed.headers.get("etag")).not.toBe(first.headers.get("etag"));
    expect(isClose(mean(await decode(changed.bytes)), BLUE)).toBe(true);
    expect(origin.counts.full.get("/reval/b.png")).toBe(2);
  });

  it("refetches an origin without validators after its freshness, keeping the variant when the bytes match", async () => {
    origin.put("/plain/c.png", await solid(40, 20, GREEN), false);
    const target = await url("short", "plain/c.png", ["w_20"]);
    expect((await get(target)).headers.get("x-cache")).toBe("MISS");
    await wait(1200);
    expect((await get(target)).headers.get("x-cache")).toBe("HIT");
    expect(origin.counts.full.get("/plain/c.png")).toBe(2);
  });

  it("fetches an original once for 50 concurrent misses", async () => {
    origin.put("/burst/d.png", await halves(60, 30, RED, BLUE));
    const targets = await Promise.all(
      Array.from({ length: 50 }, (_, index) => url("cms", "burst/d.png", [`w_${10 + (index % 5)}`])),
    );
    const answers = await Promise.all(targets.map((target) => get(target)));
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    expect(origin.counts.full.get("/burst/d.png")).toBe(1);
  });

  it("answers 404, 502, 504 and 422 in the contract's shape for missing, failing, slow, off-host, huge, pixel-bomb and non-image origins", async () => {
    const status = async (file: string) => {
      const answer = await get(await url("cms", file, ["w_20"]));
      // The contract's error shape, the code beside it.
      expect(answer.json, file).toMatchObject({ status: answer.status });
      expect(answer.json.type, file).toMatch(/^https:\/\/docs\.img-processing\.com\/errors\//);
      expect(typeof answer.json.error, file).toBe("string");
      expect(typeof (answer.json.message ?? answer.json.errors?.[0]), file).toBe("string");
      return [answer.status, answer.json.code];
    };
    expect(await status("photos/missing.png")).toEqual([404, "ORIGIN_NOT_FOUND"]);
    expect(await status("boom/a.png")).toEqual([502, "ORIGIN_ERROR"]);
    expect(await status("page/a.png")).toEqual([502, "ORIGIN_ERROR"]);
    expect(await status("away/a.png")).toEqual([502, "ORIGIN_ERROR"]);
    expect(await status("slow/a.png")).toEqual([504, "ORIGIN_TIMEOUT"]);
    expect(await status("huge/a.png")).toEqual([422, "IMAGE_TOO_LARGE"]);
    // The pixel limit from the header, before any decode (a decode would need 1.6 GB).
    expect(await status("bomb/a.png")).toEqual([422, "IMAGE_TOO_LARGE"]);
    const unknown = await get(`/v/_/o/nowhere/w_20/photos/a.png.png`);
    expect([unknown.status, unknown.json?.code]).toEqual([404, "ORIGIN_NOT_FOUND"]);
  });

  it("refuses paths that climb out: .., encoded slashes and dots, empty and absolute segments, links out", async () => {
    const signedRaw = async (originName: string, encodedPath: string) => {
      const signedPath = `/o/${originName}/w_10/${encodedPath}.png`;
      return rawGet(running.url, `/v/${await sign(SECRET, signedPath)}${signedPath}`);
    };
    for (const climb of [
      "../secret",
      "icons/../../secret",
      "%2E%2E/secret",
      "icons%2F..%2F..%2Fsecret",
      "icons%5C..%5Csecret",
      "icons//blue",
      "/etc/passwd",
      "icons/%00blue",
    ]) {
      const answer = await signedRaw("assets", climb);
      expect([404, 422], `${climb}: ${answer.status} ${answer.body}`).toContain(answer.status);
    }
    const link = await get(await url("assets", "icons/out.png", ["w_10"]));
    expect([link.status, link.json?.code]).toEqual([404, "ORIGIN_NOT_FOUND"]);
    expect(originSignedPath("assets", "icons/blue.png", ["w_10"], "png")).toBe(
      "/o/assets/w_10/icons/blue.png.png",
    );
  });
});
