/**
 * The playground (`/`) and the API reference (`/docs`) in a real headless Chromium (Debian's
 * `chromium`, see `@pixport/testing/chromium`). Every request each page makes is recorded and must
 * stay on loopback.
 */
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { PixportServer } from "@pixport/server";
import { expectLoopbackOnly, launchChromium, recordRequests } from "@pixport/testing/chromium";
import type { Browser } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decode, isClose, newKey, pixel, removeDir, startServer, tempDataDir } from "./harness.js";

let browser: Browser;
let server: PixportServer;
let dataDir: string;
let key: string;
let artifacts: string;

beforeAll(async () => {
  browser = await launchChromium();
  dataDir = await tempDataDir();
  server = await startServer(dataDir);
  key = await newKey(server, "live", "browser");
  artifacts = await mkdtemp(path.join(tmpdir(), "pixport-browser-artifacts-"));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await removeDir(dataDir);
});

/** A photo-like PNG: a colour gradient, so the page and the screenshot have something to show. */
async function sample(): Promise<Buffer> {
  const width = 320;
  const height = 240;
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw.set([x % 256, y, 255 - (x % 256)], (y * width + x) * 3);
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

describe("the playground at /", () => {
  it("takes a key, uploads, resizes with a letterbox colour, downloads, publishes, shows a 422", async () => {
    const context = await browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    const urls = recordRequests(page);
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));

    const home = await page.goto(`${server.url}/`);
    expect(home?.status()).toBe(200);
    expect(home?.headers()["content-security-policy"]).toContain("script-src 'self'");
    // The key, typed and submitted with the keyboard.
    await page.focus("#key");
    await page.keyboard.type(key);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#main:not([hidden])");
    // (The page's globals are typed loosely: this suite compiles without the DOM library.)
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem("pixport.apiKey"))).toBe(key);

    await page.setInputFiles("#file", { name: "sample.png", mimeType: "image/png", buffer: await sample() });
    await page.waitForSelector("#work:not([hidden])");
    await expect.poll(() => page.textContent("#status")).toContain("Uploaded sample");
    expect(await page.textContent("#source-facts")).toContain("320 × 240");
    expect(await page.locator("#images .thumb").count()).toBe(1);

    // resize 200 x 100, contain, red bars: the form is generated from the OpenAPI document.
    await page.selectOption("#operation", "resize");
    await page.fill("#field-width", "200");
    await page.fill("#field-height", "100");
    await page.selectOption("#field-fit", "contain");
    await page.fill("#field-letterbox_color", "#ff0000");
    await page.click("#run");
    await page.waitForSelector("#result:not([hidden])");
    await expect.poll(() => page.textContent("#result-facts")).toContain("200 × 100");
    expect(await page.textContent("#result-facts")).toContain("usage 1");
    const rendered = await page.$eval("#result-image", (image: any) => [
      image.naturalWidth,
      image.naturalHeight,
      image.complete,
    ]);
    expect(rendered).toEqual([200, 100, true]);
    const curl = await page.inputValue("#curl");
    expect(curl).toContain(`${server.url}/v1/images/`);
    expect(curl).toContain('"letterbox_color":"#ff0000"');

    // The downloaded bytes: 200 x 100 with red letterbox bars at the sides.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    const bytes = new Uint8Array(await readFile((await download.path())!));
    const raw = await decode(bytes);
    expect([raw.width, raw.height]).toEqual([200, 100]);
    expect(isClose(pixel(raw, 3, 50), [255, 0, 0])).toBe(true);
    expect(isClose(pixel(raw, 196, 50), [255, 0, 0])).toBe(true);

    // Publish, then open the public link in the browser.
    await page.click("#publish");
    await page.waitForSelector("#public:not([hidden])");
    const link = await page.getAttribute("#public-link", "href");
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const opened = await context.newPage();
    const publicResponse = await opened.goto(link!);
    expect(publicResponse?.status()).toBe(200);
    expect(publicResponse?.headers()["content-type"]).toMatch(/^image\//);
    await opened.close();

    // The result page as an artifact, and it is not blank.
    const shot = path.join(artifacts, "playground-result.png");
    const screenshot = await page.screenshot({ path: shot, fullPage: true });
    const stats = await sharp(screenshot).stats();
    expect(stats.channels.some((channel) => channel.stdev > 20)).toBe(true);
    console.log(`playground screenshot: ${shot}`);

    // An invalid field: the 422's message and field list are on the page.
    await page.fill("#field-width", "0");
    await page.click("#run");
    await page.waitForSelector("#error:not([hidden])");
    const shown = await page.textContent("#error");
    expect(shown).toContain("422");
    expect(shown).toMatch(/width must be/);

    // Drag and drop: a file dropped on the drop zone is uploaded and becomes the source.
    const small = (
      await sharp({ create: { width: 48, height: 32, channels: 3, background: "#00a000" } })
        .png()
        .toBuffer()
    ).toString("base64");
    const dataTransfer = await page.evaluateHandle((base64: string) => {
      const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
      const transfer = new (globalThis as any).DataTransfer();
      transfer.items.add(new File([bytes], "dropped.png", { type: "image/png" }));
      return transfer;
    }, small);
    await page.dispatchEvent("#drop", "drop", { dataTransfer });
    await expect.poll(() => page.textContent("#status")).toContain("Uploaded dropped");
    expect(await page.textContent("#source-facts")).toContain("48 × 32");

    // Phone width: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(
      await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
    ).toBeLessThanOrEqual(390);

    expect(errors).toEqual([]);
    expectLoopbackOnly(urls);
    await context.close();
  }, 60_000);
});

describe("the API reference at /docs", () => {
  it("lists every route of the OpenAPI document, tries one with the key, and stays on loopback", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const urls = recordRequests(page);
    const response = await page.goto(`${server.url}/docs`);
    expect(response?.status()).toBe(200);
    await page.waitForSelector(".opblock", { timeout: 20_000 });
    const document = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const expected = Object.entries(document.paths)
      .flatMap(([route, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${route}`))
      .sort();
    const listed = await page.$$eval(".opblock", (blocks) =>
      blocks.map(
        (block) =>
          `${block.querySelector(".opblock-summary-method")?.textContent?.trim()} ${block
            .querySelector(".opblock-summary-path")
            ?.getAttribute("data-path")}`,
      ),
    );
    expect([...new Set(listed)].sort()).toEqual(expected);

    // "Authorize" with the key, then "Try it out" on listImages sends it.
    await page.click(".btn.authorize");
    await page.fill(".auth-container input", key);
    await page.click(".auth-btn-wrapper .modal-btn.auth");
    await page.click(".btn-done");
    const operation = page.locator('[id$="-listImages"]');
    await operation.locator(".opblock-summary").first().click();
    await operation.locator(".try-out__btn").click();
    await operation.locator(".execute").click();
    await expect
      .poll(
        () => operation.locator(".live-responses-table tbody .response-col_status").first().textContent(),
        {
          timeout: 10_000,
        },
      )
      .toContain("200");
    expectLoopbackOnly(urls);
    await context.close();
  }, 60_000);
});

describe("with the pages turned off", () => {
  it("answers / and /docs like any unknown route, and the API as before", async () => {
    const offDir = await tempDataDir();
    const off = await startServer(offDir, { pages: { playground: false, docs: false } });
    try {
      for (const pathname of ["/", "/docs"]) {
        const response = await fetch(`${off.url}${pathname}`);
        expect(response.status).toBe(404);
        expect(await response.json()).toMatchObject({ status: 404, code: "ROUTE_NOT_FOUND" });
      }
      expect((await fetch(`${off.url}/v1/openapi.json`)).status).toBe(200);
    } finally {
      await off.close();
      await removeDir(offDir);
    }
  });
});
