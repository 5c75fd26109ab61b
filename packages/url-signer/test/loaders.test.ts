/**
 * The framework loaders against the frameworks' own types and code: Next.js's `ImageLoader` and its
 * `getImageProps` (the srcset Next.js writes with a custom loader), and unpic's transformer type
 * and `@unpic/react` rendered with react-dom/server.
 */
import { Image as UnpicImage, type ImageProps as UnpicImageProps } from "@unpic/react/base";
import { getImageProps, type ImageLoader } from "next/image";
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import type { Operations, TransformerFunction } from "unpic";
import { afterEach, describe, expect, it } from "vitest";
import pixportLoader, { createNextLoader } from "../src/next.js";
import { createUnpicTransformer } from "../src/unpic.js";

const base = "https://img.test";

/** The URL and descriptor of each srcset candidate. */
function candidates(srcset: string): { url: string; descriptor: string }[] {
  return srcset.split(/,\s+/).map((entry) => {
    const [url, descriptor] = entry.trim().split(/\s+/);
    return { url: url!, descriptor: descriptor! };
  });
}

describe("Next.js loader (@pixport/url-signer/next)", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("is a Next.js ImageLoader, and Next's getImageProps writes one origin URL per width", () => {
    const loader: ImageLoader = createNextLoader({ base, origin: "cms" });
    // The check has teeth: a loader returning something else is not an ImageLoader.
    // @ts-expect-error a Next.js loader returns a string
    const wrong: ImageLoader = () => 1;
    expect(typeof wrong).toBe("function");
    const { props } = getImageProps({
      loader,
      src: "/products/red shoe.jpg",
      width: 640,
      height: 480,
      alt: "",
    });
    // Next asks for 1x and 2x of a fixed width, from its default sizes (640 -> 640, 1280 -> 1920).
    expect(candidates(props.srcSet!)).toEqual([
      { url: `${base}/v/_/o/cms/w_640/products/red%20shoe.jpg.auto`, descriptor: "1x" },
      { url: `${base}/v/_/o/cms/w_1920/products/red%20shoe.jpg.auto`, descriptor: "2x" },
    ]);
    expect(props.src).toBe(`${base}/v/_/o/cms/w_1920/products/red%20shoe.jpg.auto`);
    const { props: filled } = getImageProps({
      loader,
      src: "/p.jpg",
      fill: true,
      sizes: "50vw",
      quality: 75,
      alt: "",
    });
    const widths = candidates(filled.srcSet!).map(({ url, descriptor }) => [
      url.match(/w_(\d+)/)![1],
      descriptor,
    ]);
    expect(widths.length).toBeGreaterThan(3);
    for (const [width, descriptor] of widths) expect(descriptor).toBe(`${width}w`);
    expect(filled.srcSet).toContain("/v/_/o/cms/q_75,w_");
  });

  it("the default export reads NEXT_PUBLIC_PIXPORT_URL and NEXT_PUBLIC_PIXPORT_ORIGIN", () => {
    const loader: ImageLoader = pixportLoader;
    delete process.env.NEXT_PUBLIC_PIXPORT_URL;
    expect(() => loader({ src: "/a.jpg", width: 10 })).toThrow(/NEXT_PUBLIC_PIXPORT_URL/);
    process.env.NEXT_PUBLIC_PIXPORT_URL = "https://img.test/";
    process.env.NEXT_PUBLIC_PIXPORT_ORIGIN = "assets";
    expect(loader({ src: "/a/b.png", width: 828, quality: 75 })).toBe(
      "https://img.test/v/_/o/assets/q_75,w_828/a/b.png.auto",
    );
  });

  it("maps absolute srcs by origin prefix, rounds to the allow-list and refuses what it cannot map", () => {
    const loader = createNextLoader({
      base,
      origins: { cms: "https://cms.test/media/", shop: "https://cms.test/media/shop/" },
      widths: [320, 640, 1280],
      qualities: [50, 80],
      ext: "webp",
    });
    expect(loader({ src: "https://cms.test/media/shop/caf%C3%A9.jpg", width: 500, quality: 70 })).toBe(
      `${base}/v/_/o/shop/q_80,w_640/caf%C3%A9.jpg.webp`,
    );
    expect(loader({ src: "https://cms.test/media/x.jpg", width: 4000 })).toBe(
      `${base}/v/_/o/cms/w_1280/x.jpg.webp`,
    );
    expect(() => loader({ src: "https://elsewhere.test/x.jpg", width: 10 })).toThrow(/configured origins/);
    expect(() => loader({ src: "/x.jpg", width: 10 })).toThrow(/origin option/);
    expect(() => loader({ src: "https://cms.test/media/x.jpg?v=2", width: 10 })).toThrow(/query/);
    expect(() => loader({ src: "https://cms.test/media/../secret.jpg", width: 10 })).toThrow(TypeError);
  });

  it("asks q_auto of images without a quality prop, within an allow-list that names automatic qualities", () => {
    const loader: ImageLoader = createNextLoader({ base, origin: "cms", quality: "auto" });
    const { props } = getImageProps({ loader, src: "/p.jpg", width: 640, height: 480, alt: "" });
    expect(candidates(props.srcSet!).map(({ url }) => url)).toEqual([
      `${base}/v/_/o/cms/q_auto,w_640/p.jpg.auto`,
      `${base}/v/_/o/cms/q_auto,w_1920/p.jpg.auto`,
    ]);
    // A quality prop still wins, rounded to the listed numbers when there are some.
    const mixed = createNextLoader({ base, origin: "cms", quality: "auto:eco", qualities: [60, "auto:eco"] });
    expect(mixed({ src: "/p.jpg", width: 64 })).toBe(`${base}/v/_/o/cms/q_auto:eco,w_64/p.jpg.auto`);
    expect(mixed({ src: "/p.jpg", width: 64, quality: 75 })).toBe(`${base}/v/_/o/cms/q_60,w_64/p.jpg.auto`);
    // Only automatic qualities listed: a quality prop gives way to the loader's automatic one.
    const onlyAuto = createNextLoader({ base, origin: "cms", quality: "auto:good", qualities: ["auto"] });
    expect(onlyAuto({ src: "/p.jpg", width: 64, quality: 90 })).toBe(
      `${base}/v/_/o/cms/q_auto,w_64/p.jpg.auto`,
    );
    const noDefault = createNextLoader({ base, origin: "cms", qualities: ["auto:best"] });
    expect(noDefault({ src: "/p.jpg", width: 64, quality: 90 })).toBe(`${base}/v/_/o/cms/w_64/p.jpg.auto`);
    // An automatic quality off the list would be a 403: the loader says so while rendering.
    const offList = createNextLoader({ base, origin: "cms", quality: "auto:best", qualities: [75, "auto"] });
    expect(() => offList({ src: "/p.jpg", width: 64 })).toThrow(/allow-list \(75, auto\).*"auto:best"/);
  });
});

describe("unpic transformer (@pixport/url-signer/unpic)", () => {
  it("is an unpic TransformerFunction and @unpic/react renders pixport URLs in src and srcset", () => {
    const transformer: TransformerFunction<Operations, undefined> = createUnpicTransformer({
      base,
      origin: "cms",
      quality: 70,
    });
    const props: UnpicImageProps<Operations, undefined> = {
      transformer,
      src: "/products/shoe.jpg",
      width: 400,
      height: 300,
      alt: "shoe",
    };
    const html = renderToString(createElement(UnpicImage, props));
    const srcset = html.match(/srcset="([^"]+)"/i)?.[1];
    expect(srcset, html).toBeDefined();
    const entries = candidates(srcset!);
    // unpic's constrained layout: 1x, 2x and its breakpoints below 2x, each URL at its width.
    expect(entries.map(({ descriptor }) => descriptor)).toEqual(["400w", "640w", "750w", "800w"]);
    for (const { url, descriptor } of entries) {
      expect(url).toBe(`${base}/v/_/o/cms/q_70,w_${descriptor.slice(0, -1)}/products/shoe.jpg.auto`);
    }
    expect(html).toMatch(/src="https:\/\/img\.test\/v\/_\/o\/cms\/q_70,w_400\/products\/shoe\.jpg\.auto"/);
    expect(html).toMatch(/object-fit:cover/);
  });

  it("takes string operations and a format from <Source type>, and sends no height", () => {
    const transformer = createUnpicTransformer({ base, origin: "cms" });
    expect(transformer("/a.png", { width: "320", height: "100", quality: "55", format: "webp" })).toBe(
      `${base}/v/_/o/cms/q_55,w_320/a.png.webp`,
    );
    expect(transformer("/a.png", { width: 24, format: "bmp" })).toBe(`${base}/v/_/o/cms/w_24/a.png.auto`);
    expect(transformer("/a.png", { width: 64, quality: "auto:eco" })).toBe(
      `${base}/v/_/o/cms/q_auto:eco,w_64/a.png.auto`,
    );
    // q_auto:good is written q_auto (one variant); an unknown level is no quality.
    expect(transformer("/a.png", { width: 64, quality: "auto:good" })).toBe(
      `${base}/v/_/o/cms/q_auto,w_64/a.png.auto`,
    );
    expect(transformer("/a.png", { width: 64, quality: "auto:max" })).toBe(
      `${base}/v/_/o/cms/w_64/a.png.auto`,
    );
    const mapped = createUnpicTransformer({ base, origins: { cms: "https://cms.test/" } });
    expect(mapped(new URL("https://cms.test/a%20b.png"), { width: 64 })).toBe(
      `${base}/v/_/o/cms/w_64/a%20b.png.auto`,
    );
  });
});
