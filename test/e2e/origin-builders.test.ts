/**
 * Every builder of origin variant URLs against the real server: `originVariantUrl` (signed and
 * unsigned), `unsignedOriginUrl`, `originSrcset`, the Next.js loader and the unpic transformer.
 * What they write must be what the server answers (200, the width asked, the format asked), and an
 * unsigned URL outside the origin's allow-list must be a 403 in the contract's message shape.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { originSrcset, originVariantUrl, unsignedOriginUrl } from "@pixport/url-signer";
import { createNextLoader } from "@pixport/url-signer/next";
import { createUnpicTransformer } from "@pixport/url-signer/unpic";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, photo, useServer } from "./harness.js";
import { startLoopbackOrigin } from "./origin-fixtures.js";

const SECRET = "origin-builders-secret-0123456789";
/** The open origins' allow-list: Next.js's default widths, as a site would configure it. */
const WIDTHS = [64, 128, 256, 384, 640, 750, 828, 1080];
const QUALITIES = [60, 75];
/** An allow-list that names automatic quality: q_auto (and q_auto:good, the same) and q_auto:eco. */
const AUTO_QUALITIES = [60, "auto", "auto:eco"] as const;
const FORMATS = ["auto", "webp", "png"] as const;
const SOURCE = { width: 1200, height: 800 };
const FILE = "products/red shoe.jpg";

let origin: Awaited<ReturnType<typeof startLoopbackOrigin>>;
let directory: string;

beforeAll(async () => {
  const bytes = await photo(SOURCE.width, SOURCE.height);
  directory = await mkdtemp(path.join(tmpdir(), "pixport-origin-builders-"));
  await mkdir(path.join(directory, "products"));
  await writeFile(path.join(directory, FILE), bytes);
  origin = await startLoopbackOrigin();
  origin.put(`/media/${FILE}`, bytes);
});

afterAll(async () => {
  await origin.close();
  await rm(directory, { recursive: true, force: true });
});

describe("origin URL builders against the real server", () => {
  const unsigned = { widths: WIDTHS, qualities: QUALITIES, formats: FORMATS };
  const running = useServer(() => ({
    delivery: {
      signingKeys: [SECRET],
      origins: {
        signed: { type: "fs", directory },
        assets: { type: "fs", directory, unsigned },
        cms: { type: "http", baseUrl: `${origin.url}/media/`, allowPrivateNetwork: true, unsigned },
        tuned: { type: "fs", directory, unsigned: { ...unsigned, qualities: AUTO_QUALITIES } },
      },
    },
  }));

  /** GETs `url` and checks the answer is an image of `width` px in `format` (a content type). */
  async function expectImage(url: string, width: number, formats: string[], accept = "image/webp,*/*") {
    const answer = await call(running.url, "GET", url, { headers: { Accept: accept } });
    expect(answer.status, `${url}: ${JSON.stringify(answer.json)}`).toBe(200);
    const type = answer.headers.get("content-type") ?? "";
    expect(
      formats.map((format) => `image/${format}`),
      url,
    ).toContain(type);
    const metadata = await sharp(answer.bytes).metadata();
    // The bytes are what the header says, at the width the URL asks (the height keeps 3:2).
    expect(`image/${metadata.format === "heif" ? "avif" : metadata.format}`).toBe(type);
    expect([metadata.width, metadata.height], url).toEqual([width, Math.round((width * 2) / 3)]);
  }

  /** The 403 of an unsigned URL off the allow-list: the contract's message body, code FORBIDDEN. */
  async function expectRefused(url: string) {
    const answer = await call(running.url, "GET", url);
    expect(answer.status, url).toBe(403);
    expect(answer.headers.get("content-type")).toContain("application/json");
    expect(answer.json).toEqual({
      type: "https://docs.img-processing.com/errors/forbidden",
      error: "Forbidden",
      status: 403,
      message: expect.stringMatching(/^(Unsigned URLs|Origin) .+\.$/),
      code: "FORBIDDEN",
    });
  }

  it("originVariantUrl: signed with any modifiers, unsigned within the allow-list", async () => {
    const base = running.url;
    const signed = await originVariantUrl({
      base,
      secret: SECRET,
      origin: "signed",
      path: FILE,
      modifiers: ["w_300", "q_50"],
      ext: "png",
    });
    await expectImage(signed, 300, ["png"]);
    const unsignedUrl = await originVariantUrl({ base, origin: "assets", path: FILE, modifiers: ["w_640"] });
    expect(unsignedUrl).toContain("/v/_/o/assets/w_640/products/red%20shoe.jpg.auto");
    await expectImage(unsignedUrl, 640, ["webp", "jpeg"]);
    const sync = unsignedOriginUrl({
      base,
      origin: "cms",
      path: FILE,
      modifiers: ["q_75", "w_384"],
      ext: "webp",
    });
    await expectImage(sync, 384, ["webp"]);
  });

  it("originSrcset: every candidate, signed and unsigned, is the width it names", async () => {
    const srcsetOf = async (options: {
      origin: string;
      secret?: string;
      widths: number[];
      sourceWidth?: number;
    }) => {
      const set = await originSrcset({ base: running.url, path: FILE, ext: "webp", ...options });
      return set.split(", ").map((entry) => entry.split(" ") as [string, string]);
    };
    // Signed: a width above the source's is replaced by the source's own width.
    const signed = await srcsetOf({
      origin: "signed",
      secret: SECRET,
      widths: [256, 640, 1920],
      sourceWidth: 1200,
    });
    expect(signed.map(([, descriptor]) => descriptor)).toEqual(["256w", "640w", "1200w"]);
    // Unsigned: widths of the allow-list.
    const open = await srcsetOf({ origin: "cms", widths: [128, 750, 1080] });
    expect(open.map(([url]) => url.includes("/v/_/o/cms/w_"))).toEqual([true, true, true]);
    // Unsigned, a source narrower than a listed width: its own width is asked as the next listed one.
    const narrow = await srcsetOf({ origin: "cms", widths: [128, 750, 1080], sourceWidth: 700 });
    const narrowSet = narrow.map(([url, descriptor]) => [url.replace(/.*\/o\/cms\//, ""), descriptor]);
    expect(narrowSet).toEqual([
      ["w_128/products/red%20shoe.jpg.webp", "128w"],
      ["w_750/products/red%20shoe.jpg.webp", "700w"],
    ]);
    // On the allow-list, so answered (w_700 was a 403); this source is wider, so it is 750 px here.
    for (const [url] of narrow) expect((await fetch(url)).status, url).toBe(200);
    for (const [url, descriptor] of [...signed, ...open]) {
      await expectImage(url, Number.parseInt(descriptor, 10), ["webp"]);
    }
  });

  it("the Next.js loader: path srcs, absolute srcs by origin prefix, widths rounded to the allow-list", async () => {
    const loader = createNextLoader({
      base: running.url,
      origin: "assets",
      origins: { cms: `${origin.url}/media/` },
      widths: WIDTHS,
      qualities: QUALITIES,
    });
    // What next/image passes: each width of its srcset, and the quality prop.
    await expectImage(loader({ src: `/${FILE}`, width: 828 }), 828, ["webp", "jpeg"]);
    await expectImage(loader({ src: "/products/red%20shoe.jpg", width: 700, quality: 75 }), 750, [
      "webp",
      "jpeg",
    ]);
    const absolute = loader({ src: `${origin.url}/media/${FILE}`, width: 128, quality: 62 });
    expect(absolute).toContain("/v/_/o/cms/q_60,w_128/products/red%20shoe.jpg.auto");
    await expectImage(absolute, 128, ["webp", "jpeg"]);
  });

  it("the unpic transformer: width, quality and a <Source type> format", async () => {
    const transformer = createUnpicTransformer({
      base: running.url,
      origin: "assets",
      origins: { cms: `${origin.url}/media/` },
    });
    await expectImage(transformer(`/${FILE}`, { width: 640 }), 640, ["webp", "jpeg"]);
    await expectImage(transformer(`/${FILE}`, { width: "256", quality: "60", format: "png" }), 256, ["png"]);
    const absolute = new URL(`${origin.url}/media/products/red%20shoe.jpg`);
    await expectImage(transformer(absolute, { width: 64, format: "webp" }), 64, ["webp"]);
  });

  it("q_auto unsigned where the allow-list names it: builders and loaders, each level as listed", async () => {
    const base = running.url;
    const at = (modifiers: string[], name = "tuned") =>
      unsignedOriginUrl({ base, origin: name, path: FILE, modifiers, ext: "webp" });
    await expectImage(at(["q_auto", "w_256"]), 256, ["webp"]);
    // q_auto:good is q_auto's variant: the builder writes it q_auto; as sent, it is a hit.
    expect(at(["q_auto:good", "w_256"])).toBe(at(["q_auto", "w_256"]));
    const long = `${base}/v/_/o/tuned/q_auto:good,w_256/products/red%20shoe.jpg.webp`;
    const hit = await call(base, "GET", long);
    expect([hit.status, hit.headers.get("x-cache")]).toEqual([200, "HIT"]);
    await expectImage(at(["q_auto:eco", "w_128"]), 128, ["webp"]);
    const loader = createNextLoader({
      base,
      origin: "tuned",
      widths: WIDTHS,
      qualities: AUTO_QUALITIES,
      quality: "auto",
    });
    const next = loader({ src: `/${FILE}`, width: 100 });
    expect(next).toContain("/v/_/o/tuned/q_auto,w_128/");
    await expectImage(next, 128, ["webp", "jpeg"]);
    const unpic = createUnpicTransformer({ base, origin: "tuned" })(`/${FILE}`, {
      width: 64,
      quality: "auto:eco",
    });
    expect(unpic).toContain("/v/_/o/tuned/q_auto:eco,w_64/");
    await expectImage(unpic, 64, ["webp", "jpeg"]);
    // Off the list: a level it does not name, and q_auto on an origin that lists numbers only.
    await expectRefused(at(["q_auto:best", "w_256"]));
    await expectRefused(at(["q_auto", "w_256"], "assets"));
    await expectRefused(at(["q_auto:eco", "w_256"], "cms"));
  });

  it("answers 403 in the contract's shape for unsigned URLs outside the allow-list", async () => {
    const base = running.url;
    const open = (modifiers: string[], ext: "auto" | "jpeg" | "webp" = "auto", name = "assets") =>
      unsignedOriginUrl({ base, origin: name, path: FILE, modifiers, ext });
    await expectRefused(open(["w_700"]));
    await expectRefused(open(["q_80", "w_640"]));
    await expectRefused(open(["h_300", "w_640"]));
    await expectRefused(open(["w_640"], "jpeg"));
    await expectRefused(open([]));
    await expectRefused(open(["w_640"], "auto", "signed"));
    // Loaders without the allow-list pass widths as asked: the server is the one that refuses.
    await expectRefused(createNextLoader({ base, origin: "cms" })({ src: `/${FILE}`, width: 1000 }));
    await expectRefused(
      createUnpicTransformer({ base, origin: "cms" })(`/${FILE}`, { width: 640, quality: 90 }),
    );
    const set = await originSrcset({ base, origin: "assets", path: FILE, widths: [500] });
    await expectRefused(set.split(" ")[0]!);
  });
});
