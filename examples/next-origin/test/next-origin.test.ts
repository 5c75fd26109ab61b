/**
 * The example's build: `next build` (a static export) with pixport's loader as `images.loaderFile`,
 * configured by NEXT_PUBLIC_PIXPORT_URL and NEXT_PUBLIC_PIXPORT_ORIGIN, which Next.js inlines at
 * build time. Every `srcset` of the page must list unsigned origin variant URLs, one per width Next
 * asks for, each asking for the width its candidate names.
 */
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import sizes from "../image-sizes.json";

const example = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// Nothing listens there: the build only writes URLs.
const BASE = "http://127.0.0.1:9";
const ORIGIN = "assets";

let html: string;
let buildSeconds: number;

beforeAll(async () => {
  const started = performance.now();
  await promisify(execFile)(path.join(example, "node_modules/.bin/next"), ["build"], {
    cwd: example,
    env: {
      ...process.env,
      NEXT_TELEMETRY_DISABLED: "1",
      NEXT_PUBLIC_PIXPORT_URL: BASE,
      NEXT_PUBLIC_PIXPORT_ORIGIN: ORIGIN,
    },
  });
  buildSeconds = (performance.now() - started) / 1000;
  html = await readFile(path.join(example, "out/index.html"), "utf8");
}, 600_000);

/** The `srcset` candidates of each `<img>` of the page. */
function srcsets(): { url: string; descriptor: string }[][] {
  return [...html.matchAll(/srcSet="([^"]+)"/g)].map((match) =>
    match[1]!.split(", ").map((entry) => {
      const [url, descriptor] = entry.split(" ") as [string, string];
      return { url, descriptor };
    }),
  );
}

describe("example: next-origin (Next.js static export with pixport's loader)", () => {
  it("writes unsigned origin variant URLs for every width of every image", () => {
    console.log(`next build took ${buildSeconds.toFixed(1)} s`);
    const all = srcsets();
    expect(all).toHaveLength(4);
    const allowed = [...sizes.imageSizes, ...sizes.deviceSizes];
    for (const candidates of all) {
      for (const { url, descriptor } of candidates) {
        const match = new RegExp(`^${BASE}/v/_/o/${ORIGIN}/w_(\\d+)/([^ ]+)\\.auto$`).exec(url);
        expect(match, url).not.toBeNull();
        const width = Number(match![1]);
        expect(allowed, url).toContain(width);
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
      { url: `${BASE}/v/_/o/${ORIGIN}/w_640/cat.jpg.auto`, descriptor: "1x" },
      { url: `${BASE}/v/_/o/${ORIGIN}/w_1080/cat.jpg.auto`, descriptor: "2x" },
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
    const loader = texts.filter((text) => text.includes(`${BASE}`));
    expect(loader.length).toBeGreaterThan(0);
    for (const text of loader) expect(text).not.toContain("process.env.NEXT_PUBLIC_PIXPORT_URL");
  });
});
