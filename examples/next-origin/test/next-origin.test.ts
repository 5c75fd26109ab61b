/**
 * The example, built once and then used: `next build` (a static export) with pixport's loader as
 * `images.loaderFile`, configured by NEXT_PUBLIC_PIXPORT_URL and NEXT_PUBLIC_PIXPORT_ORIGIN (which
 * Next.js inlines at build time), against a real pixport server whose `assets` origin is a
 * directory of the page's images. Every `srcset` must list unsigned origin variant URLs, one per
 * width Next asks for; then the built site, served as plain files, is opened in real Chromium at
 * two viewports and pixel ratios, where every image must load from pixport at the width of the
 * candidate the browser picked.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type PixportServer, resolveServerConfig, startPixportServer } from "@pixport/server";
import { expectLoopbackOnly, launchChromium, recordRequests } from "@pixport/testing/chromium";
import type { Browser, Response } from "playwright-core";
import serveStatic from "serve-static";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sizes from "../image-sizes.json";
import { pickedBy, type RenderedImage, srcsetCandidates } from "./srcset-pick.js";

const example = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ORIGIN = "assets";
const ALLOWED = [...sizes.imageSizes, ...sizes.deviceSizes];

let work: string;
let pixport: PixportServer;
let site: Server;
let siteUrl: string;
let browser: Browser;
let html: string;
let buildSeconds: number;

/**
 * The origin's images, made from examples/assets and large enough (2400 px wide) that every width
 * the page can ask for is a real downscale, so an image's width is the width its URL asks.
 */
async function writeOriginImages(directory: string): Promise<void> {
  const assets = path.join(example, "..", "assets");
  const cat = sharp(path.join(assets, "cat.jpg")).resize(2400, 1600);
  await mkdir(path.join(directory, "photos"), { recursive: true });
  await cat.clone().jpeg({ quality: 85 }).toFile(path.join(directory, "cat.jpg"));
  await cat
    .clone()
    .grayscale()
    .jpeg({ quality: 85 })
    .toFile(path.join(directory, "photos", "cat gray.jpg"));
  await cat
    .clone()
    .flop()
    .jpeg({ quality: 85 })
    .toFile(path.join(directory, "photos", "cat-small.jpg"));
  await sharp(path.join(assets, "logo.png")).resize(1200, 400).png().toFile(path.join(directory, "logo.png"));
}

/** A plain static file server for the export in `out/` (the example needs no Next.js server). */
async function serveSite(directory: string): Promise<Server> {
  const files = serveStatic(directory);
  const server = createServer((request, response) =>
    files(request, response, () => response.writeHead(404).end()),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "pixport-next-origin-"));
  const originDir = path.join(work, "origin");
  await writeOriginImages(originDir);
  // The prebuilt server on its embedded defaults, plus the origin: unsigned, allowing exactly the
  // widths Next.js asks for.
  pixport = await startPixportServer(
    resolveServerConfig({
      port: 0,
      host: "127.0.0.1",
      dataDir: path.join(work, "data"),
      log: false,
      delivery: {
        origins: {
          [ORIGIN]: {
            type: "fs",
            directory: originDir,
            unsigned: { widths: ALLOWED, qualities: [75], formats: ["auto"] },
          },
        },
      },
    }),
  );
  const started = performance.now();
  await promisify(execFile)(path.join(example, "node_modules/.bin/next"), ["build"], {
    cwd: example,
    env: {
      ...process.env,
      NEXT_TELEMETRY_DISABLED: "1",
      NEXT_PUBLIC_PIXPORT_URL: pixport.url,
      NEXT_PUBLIC_PIXPORT_ORIGIN: ORIGIN,
    },
  });
  buildSeconds = (performance.now() - started) / 1000;
  html = await readFile(path.join(example, "out/index.html"), "utf8");
  site = await serveSite(path.join(example, "out"));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  site?.closeAllConnections();
  await new Promise((resolve) => site?.close(resolve));
  await pixport?.close();
  await rm(work, { recursive: true, force: true });
});

/** The `srcset` candidates of each `<img>` of the built page. */
function srcsets() {
  return [...html.matchAll(/srcSet="([^"]+)"/g)].map((match) => srcsetCandidates(match[1]!));
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("example: next-origin (Next.js static export with pixport's loader)", () => {
  it("writes unsigned origin variant URLs for every width of every image", () => {
    console.log(`next build took ${buildSeconds.toFixed(1)} s`);
    const all = srcsets();
    expect(all).toHaveLength(4);
    const variant = new RegExp(`^${escaped(pixport.url)}/v/_/o/${ORIGIN}/w_(\\d+)/([^ ]+)\\.auto$`);
    for (const candidates of all) {
      for (const { url, descriptor } of candidates) {
        const match = variant.exec(url);
        expect(match, url).not.toBeNull();
        const width = Number(match![1]);
        expect(ALLOWED, url).toContain(width);
        // A width candidate asks for exactly its width.
        if (descriptor.endsWith("w")) expect(descriptor).toBe(`${width}w`);
      }
    }
    const paths = all.map((candidates) => /\/w_\d+\/(.+)\.auto$/.exec(candidates[0]!.url)![1]);
    expect(paths).toEqual(["cat.jpg", "logo.png", "photos/cat%20gray.jpg", "photos/cat-small.jpg"]);
  });

  it("asks for 1x and 2x of a fixed-size image, and the device widths of a full-width one", () => {
    const [cat, , full] = srcsets();
    expect(cat).toEqual([
      { url: `${pixport.url}/v/_/o/${ORIGIN}/w_640/cat.jpg.auto`, descriptor: "1x" },
      { url: `${pixport.url}/v/_/o/${ORIGIN}/w_1080/cat.jpg.auto`, descriptor: "2x" },
    ]);
    expect(full!.map(({ descriptor }) => descriptor)).toEqual(sizes.deviceSizes.map((width) => `${width}w`));
  });

  it("inlines the loader's settings into the client bundle too", async () => {
    const chunks = path.join(example, "out/_next/static/chunks");
    const texts = await Promise.all(
      (await readdir(chunks))
        .filter((name) => name.endsWith(".js"))
        .map((name) => readFile(path.join(chunks, name), "utf8")),
    );
    const loader = texts.filter((text) => text.includes(pixport.url));
    expect(loader.length).toBeGreaterThan(0);
    for (const text of loader) expect(text).not.toContain("process.env.NEXT_PUBLIC_PIXPORT_URL");
  });

  const picked = new Map<string, number[]>();
  for (const screen of [
    { width: 800, height: 1200, deviceScaleFactor: 1 },
    { width: 1000, height: 1200, deviceScaleFactor: 2 },
  ]) {
    it(`loads every image from pixport in Chromium at ${screen.width} px, DPR ${screen.deviceScaleFactor}, at the width of the candidate picked`, async () => {
      const { deviceScaleFactor, ...viewport } = screen;
      const context = await browser.newContext({ viewport, deviceScaleFactor });
      try {
        const page = await context.newPage();
        const urls = recordRequests(page);
        const answers = new Map<string, Response>();
        page.on("response", (response) => answers.set(response.url(), response));
        expect((await page.goto(`${siteUrl}/`))?.status()).toBe(200);
        // next/image loads lazily: bring each image into view, then wait for all to settle.
        const images = page.locator("img");
        expect(await images.count()).toBe(4);
        for (let index = 0; index < 4; index += 1) await images.nth(index).scrollIntoViewIfNeeded();
        // (The page's globals are typed loosely: this suite compiles without the DOM library.)
        await page.waitForFunction(() =>
          [...(globalThis as any).document.images].every((img) => img.complete),
        );
        const rendered: RenderedImage[] = await page.evaluate(() =>
          [...(globalThis as any).document.images].map((img) => ({
            currentSrc: img.currentSrc,
            srcset: img.srcset,
            sizes: img.sizes,
            naturalWidth: img.naturalWidth,
            viewportWidth: (globalThis as any).innerWidth,
          })),
        );
        const widths: number[] = [];
        for (const image of rendered) {
          expect(image.naturalWidth, image.currentSrc).toBeGreaterThan(0);
          expect(image.currentSrc.startsWith(`${pixport.url}/v/_/o/${ORIGIN}/`), image.currentSrc).toBe(true);
          const answer = answers.get(image.currentSrc);
          expect(answer?.status(), image.currentSrc).toBe(200);
          expect(answer?.headers()["content-type"], image.currentSrc).toMatch(
            /^image\/(avif|webp|jpeg|png)$/,
          );
          // The bytes the browser got are as wide as the URL asks (naturalWidth is in CSS px,
          // divided by the candidate's density, so the bytes are read instead), and that URL is
          // the candidate a browser picks for this layout width and pixel ratio.
          const width = Number(/\/w_(\d+)\//.exec(image.currentSrc)![1]);
          expect((await sharp(await answer!.body()).metadata()).width, image.currentSrc).toBe(width);
          expect(pickedBy(image, deviceScaleFactor), image.currentSrc).toContain(image.currentSrc);
          widths.push(width);
        }
        picked.set(`${deviceScaleFactor}`, widths);
        expectLoopbackOnly(urls);
      } finally {
        await context.close();
      }
    });
  }

  it("asks for larger images on the denser, wider screen", () => {
    const [one, two] = [picked.get("1"), picked.get("2")];
    expect(one).toHaveLength(4);
    expect(two).toHaveLength(4);
    for (let index = 0; index < 4; index += 1) expect(two![index]).toBeGreaterThan(one![index]!);
  });
});
